//! The count room's result for one drop box: what finance counted, not what a table device
//! said. Entered through the API or the CLI, signed by the counter's key and journaled.
//! Finance reports take it as the table's drop for the shift whose box it was.

use crate::ids::{Money, TableId};
use serde::{Deserialize, Serialize};

/// Longest drop box id or counter name, in bytes.
pub const COUNT_TEXT_LEN_MAX: usize = 64;

/// One drop box counted: its table, the box removed (`Finance::DropBoxRemoved`), and
/// the cash and marker copies found in it, in minor units.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountResult {
    pub table: TableId,
    pub drop_box_id: String,
    /// Cash found in the box.
    pub cash: Money,
    /// Marker copies found in the box, at face value.
    pub markers: Money,
    /// When the count was made (UTC ns).
    pub counted_at_ns: i64,
    /// Who counted, as the count sheet names them.
    pub counted_by: String,
}

impl CountResult {
    /// The box's drop: cash and markers.
    pub fn drop(&self) -> Money {
        self.cash + self.markers
    }
}
