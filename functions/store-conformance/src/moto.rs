//! A real DynamoDB-compatible server for tests: moto (PyPI `moto[server]`,
//! pinned in requirements-test.txt, installed by scripts/test), started
//! through `scripts/moto-server`, which serialises requests (see there why).
//!
//! One server per test process, started on first use on a free loopback port;
//! tests share it and keep apart through their own table names. A small shell
//! watchdog stops the server when the test process ends, however it ends.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long moto may take to start (it imports a lot of Python).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The endpoint URL of this process's moto server, starting it if needed.
/// `MOTO_ENDPOINT` uses an already running server instead.
pub fn endpoint() -> String {
    // The watchdog child is kept (never waited for: it ends with the process).
    static SERVER: OnceLock<(String, Option<Mutex<Child>>)> = OnceLock::new();
    SERVER
        .get_or_init(|| match std::env::var("MOTO_ENDPOINT") {
            Ok(endpoint) if !endpoint.is_empty() => (endpoint, None),
            _ => {
                let (endpoint, watchdog) = start();
                (endpoint, Some(Mutex::new(watchdog)))
            }
        })
        .0
        .clone()
}

/// A table prefix no other test of this run uses.
pub fn unique_prefix() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "t{}-{}-",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

/// `MOTO_SERVER`, else the workspace's `scripts/moto-server`.
fn launcher() -> String {
    std::env::var("MOTO_SERVER").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/moto-server").to_string()
    })
}

fn start() -> (String, Child) {
    let binary = launcher();
    let port = free_port();
    // The watchdog: start moto, then wait while the test process ($PPID of
    // this shell) lives, then stop moto.
    let script = r#"
        "$0" -H 127.0.0.1 -p "$1" >/dev/null 2>&1 &
        moto=$!
        while kill -0 "$PPID" 2>/dev/null && kill -0 "$moto" 2>/dev/null; do sleep 0.5; done
        kill "$moto" 2>/dev/null
    "#;
    let watchdog = Command::new("sh")
        .args(["-c", script, &binary, &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let started = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(
            started.elapsed() < START_TIMEOUT,
            "{binary} did not start within {START_TIMEOUT:?}: is moto installed for the \
             python3 on PATH? scripts/test installs it (requirements-test.txt)"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (format!("http://{addr}"), watchdog)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}
