//! `simulate` stops on a signal while NATS is down: its devices republish without end,
//! so only a signal ends the run. It is started with SIGINT ignored, as a shell starts a
//! background job, so the default action cannot be what stops it.

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn simulate_stops_on_sigint_while_nats_is_down() {
    let mut nats = natsd::NatsServer::start().expect("nats-server");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_roundledger"));
    cmd.args(["simulate", "--nats", &nats.url(), "--tables", "1"])
        .args(["--rounds", "100000", "--rate", "2", "--simulated-keys"])
        .env(
            common::TEST_ONLY_SIMULATED_KEYS.0,
            common::TEST_ONLY_SIMULATED_KEYS.1,
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec only async-signal-safe calls: signal(2).
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawning simulate");
    std::thread::sleep(Duration::from_secs(2));
    nats.kill9().expect("kill nats-server");
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        child.try_wait().expect("poll").is_none(),
        "still waiting for NATS"
    );
    // SAFETY: the pid is our own child's, not yet reaped.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(s) = child.try_wait().expect("poll") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("simulate did not stop within {WAIT:?} of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err)
        .expect("stderr");
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
}
