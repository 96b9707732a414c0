//! The nats-server config fragment derived from a roster (and TLS files).

use crate::creds::Roster;
use crate::role::permissions;
use crate::tls::TlsFiles;
use std::fmt::Write;

/// Seconds a client or route has to finish its TLS handshake.
const TLS_TIMEOUT_S: u32 = 5;

/// The `authorization` block for every active user of `roster`, with its permissions,
/// and a client `tls` block when `tls` is given. Include it in (or append it to) a
/// server config; reload the server after a change.
pub fn server_config(roster: &Roster, tls: Option<&TlsFiles>) -> String {
    let mut out = String::from("authorization {\n  users = [\n");
    let mut any = false;
    for user in roster.active() {
        let p = permissions(&user.role, &user.name);
        user_entry(
            &mut out,
            &user.public_key,
            &p.publish_allow,
            &p.subscribe_allow,
        );
        any = true;
    }
    if !any {
        // An empty user list means no authorization at all: list a key nobody holds.
        let nobody = nkeys::KeyPair::new_user().public_key();
        user_entry(&mut out, &nobody, &[], &[]);
    }
    out.push_str("  ]\n}\n");
    if let Some(tls) = tls {
        out.push_str("tls ");
        out.push_str(&tls_block(tls, false));
    }
    out
}

/// `{ cert_file, key_file, ca_file, timeout[, verify] }`: for clients (`tls`), or with
/// `verify` for cluster routes, where each node proves itself with the CA.
pub fn tls_block(tls: &TlsFiles, verify: bool) -> String {
    let path = |p: &std::path::Path| quote(&p.display().to_string());
    let mut out = format!(
        "{{\n  cert_file: {}\n  key_file: {}\n  ca_file: {}\n  timeout: {TLS_TIMEOUT_S}\n",
        path(&tls.server_cert),
        path(&tls.server_key),
        path(&tls.ca_cert),
    );
    if verify {
        out.push_str("  verify: true\n");
    }
    out.push_str("}\n");
    out
}

/// One user: an empty allow list becomes `deny: [">"]` (nothing), never "everything".
fn user_entry(out: &mut String, public_key: &str, publish: &[String], subscribe: &[String]) {
    let rule = |subjects: &[String]| {
        if subjects.is_empty() {
            "{ deny: [\">\"] }".to_string()
        } else {
            let list: Vec<String> = subjects.iter().map(|s| quote(s)).collect();
            format!("{{ allow: [{}] }}", list.join(", "))
        }
    };
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        "    {{\n      nkey: {}\n      permissions: {{\n        publish: {}\n        subscribe: {}\n      }}\n    }}\n",
        quote(public_key),
        rule(publish),
        rule(subscribe),
    );
}

/// A double-quoted nats-server config string: quotes and backslashes escaped, control
/// characters as `\xHH`. Quoted strings are never variable references (`$JS...`).
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Credentials, Role};
    use std::path::PathBuf;

    #[test]
    fn config_lists_active_users_with_quoted_permissions() {
        let mut r = Roster::default();
        let ing = Credentials::issue("ingest", Role::Ingest).unwrap();
        let gone = Credentials::issue("gone", Role::Observer).unwrap();
        r.add(&ing).unwrap();
        r.add(&gone).unwrap();
        r.revoke("gone").unwrap();
        let text = server_config(&r, None);
        assert!(text.contains(&quote(&ing.public_key().unwrap())), "{text}");
        assert!(!text.contains(&gone.public_key().unwrap()), "{text}");
        assert!(text.contains("\"$JS.API.STREAM.CREATE.TABLES\""), "{text}");
        assert!(text.contains("\"_INBOX_ingest.>\""), "{text}");
        assert!(!text.contains("tls"), "{text}");
    }

    #[test]
    fn no_active_user_still_authorizes_nobody() {
        let text = server_config(&Roster::default(), None);
        assert!(text.contains("nkey: \"U"), "{text}");
        assert!(text.contains("deny: [\">\"]"), "{text}");
    }

    #[test]
    fn tls_paths_are_quoted() {
        let tls = TlsFiles {
            ca_cert: PathBuf::from("/d/ca \"x\".pem"),
            server_cert: PathBuf::from("/d/server.pem"),
            server_key: PathBuf::from("/d/server-key.pem"),
        };
        let text = server_config(&Roster::default(), Some(&tls));
        assert!(text.contains("ca_file: \"/d/ca \\\"x\\\".pem\""), "{text}");
        assert!(text.contains("tls {"), "{text}");
        assert!(!text.contains("verify"), "{text}");
        assert!(tls_block(&tls, true).contains("verify: true"));
        assert_eq!(quote("a\\b\u{1}"), "\"a\\\\b\\x01\"");
    }
}
