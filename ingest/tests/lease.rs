//! The singleton lease (`ingest::lease`) against a real `nats-server -js`: one holder at a
//! time; a holder that stops renewing (a paused process) loses the lease to the next node
//! once its TTL runs out, and on waking counts itself no holder, cannot confirm a
//! publication and cannot take the lease back.
//!
//! Waits are bounded by a multiple of the TTL; nothing asserts on time.

use async_nats::jetstream;
use ingest::lease::Lease;
use std::time::Duration;

const TTL: Duration = Duration::from_secs(2);
/// Longest a takeover may take here: the TTL, the server's expiry sweep and a margin.
const TAKEOVER_WAIT: Duration = Duration::from_secs(15);

#[tokio::test]
async fn a_paused_holder_loses_its_lease_and_publishes_nothing_more() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let js = jetstream::new(async_nats::connect(server.url()).await.expect("connect"));
    let mut a = Lease::open(&js, "sealer", "n1", TTL, 1)
        .await
        .expect("lease a");
    let mut b = Lease::open(&js, "sealer", "n2", TTL, 1)
        .await
        .expect("lease b");

    assert!(a.tick().await, "the first node takes the free lease");
    assert!(!b.tick().await, "a held lease is refused");
    let a_rev = a.confirm().await.expect("the holder confirms");
    assert!(a.revision() == Some(a_rev) && !b.holds());

    // A's process is paused: it renews nothing while B keeps trying.
    let deadline = tokio::time::Instant::now() + TAKEOVER_WAIT;
    while !b.tick().await {
        assert!(tokio::time::Instant::now() < deadline, "B never took over");
        tokio::time::sleep(b.tick_every()).await;
    }
    let b_rev = b.confirm().await.expect("the new holder confirms");
    assert!(b_rev > a_rev, "revisions only rise: {b_rev} after {a_rev}");

    // A wakes: past its TTL it is no holder, confirms nothing, cannot take it back.
    assert!(!a.holds(), "paused past its ttl");
    assert_eq!(
        a.confirm().await,
        None,
        "no publication from a stale holder"
    );
    assert!(!a.tick().await, "B holds it");
    assert!(b.tick().await && b.holds(), "B keeps it");
}

#[tokio::test]
async fn a_stale_revision_is_refused_even_within_the_ttl() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let js = jetstream::new(async_nats::connect(server.url()).await.expect("connect"));
    let mut a = Lease::open(&js, "archiver", "n1", TTL, 1)
        .await
        .expect("lease a");
    assert!(a.tick().await);
    // Someone writes the key behind A's back (an operator, a bug): A's revision is stale.
    let store = js
        .get_key_value(ingest::lease::bucket_name("archiver"))
        .await
        .expect("bucket");
    store.put("archiver", "n9".into()).await.expect("put");
    assert_eq!(
        a.confirm().await,
        None,
        "a stale revision publishes nothing"
    );
    assert!(!a.holds(), "A stepped down");
    assert!(Lease::open(&js, "archiver", "n1", Duration::ZERO, 1)
        .await
        .is_err());
}
