//! Harness of the black-box suite: starts the real `local-server` binary as a
//! child process (own temp data folder, free port), and talks to it over HTTP
//! the way a client does: raw bodies, signed with HMAC over
//! `<target>.<consumer>.<data_json>`. Every response it reads is checked
//! against the interface document, docs/openapi.yaml ([`openapi`]).
//!
//! With `BLACKBOX_BASE_URL` set the suite talks to a service it did not start
//! instead ([`external`]).
//!
//! Nothing here links the service's crates: the signing, compaction and
//! expected bodies are written again from the spec and DECISIONS, so that a
//! mistake in the service is not repeated by the tests.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::value::RawValue;

pub use serde_json::{Value, json};

pub mod clock;
pub mod external;
pub mod openapi;

pub use clock::WireClock;

/// How long a server may take to log `listening`.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a server may take to exit after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// `POST`: open a call, or close every call on an address (signed).
pub const DISPLAY: &str = "/api/v1/display";
/// `POST`: battery, position and reachability of one element or many
/// (signed).
pub const ELEMENT: &str = "/api/v1/element";
/// `GET`: the configured call types and their internal names.
pub const CALL_TYPES: &str = "/api/v1/display/call-types";
/// `POST`: a new sandbox consumer and its secret (sandbox only).
pub const SANDBOX_CONSUMERS: &str = "/api/v1/sandbox/consumers";
/// `GET`: a sandbox consumer's calls, elements and hash mismatches (sandbox
/// only; `?consumer=…&hash=…`).
pub const SANDBOX_STATE: &str = "/api/v1/sandbox/state";

/// The ten call type names of spec 2.5, in the order the service seeds them.
pub const CALL_TYPE_NAMES: [&str; 10] = [
    "Hotelruf",
    "Geräteruf",
    "Anwesenheit",
    "Funkelement-Ruf",
    "Normalruf",
    "WC",
    "Notruf",
    "Flucht",
    "Pneumatischer Ruf (REA)",
    "Störung",
];

/// The key order of a call record (spec 2.3, DECISIONS §4).
pub const CALL_KEYS: [&str; 10] = [
    "id",
    "address",
    "position",
    "section",
    "attribute",
    "element_code",
    "element_name",
    "opened_at",
    "closed_at",
    "duration",
];

/// The `PUSH_SERVICES` of every server the tests start (and of the Lambda
/// functions under test): the default push services and `localhost`, where
/// the tests' push service (`web-push-testing`, behind its recording proxy)
/// takes pushes over plain `http` (DECISIONS §20). `127.0.0.1` is not
/// listed: the tests show that an unlisted loopback address is refused.
pub const TEST_PUSH_SERVICES: &str = "fcm.googleapis.com,*.push.apple.com,\
    *.push.services.mozilla.com,*.notify.windows.com,localhost";

/// The key order of an element record (DECISIONS §4).
pub const ELEMENT_KEYS: [&str; 7] = [
    "address",
    "code",
    "name",
    "battery",
    "position",
    "reachable",
    "updated_at",
];

// ---------------------------------------------------------------------------
// The store
// ---------------------------------------------------------------------------

/// Whether this run's servers use DynamoDB: `BLACKBOX_STORE=dynamodb` runs
/// the whole suite against moto (started once by the harness, on a free
/// loopback port); otherwise the servers use their embedded SQLite store.
pub fn on_dynamodb() -> bool {
    std::env::var("BLACKBOX_STORE").is_ok_and(|store| store == "dynamodb")
}

/// For the few tests that reach into the SQLite file behind the server's
/// back: `true`, with a note, when this run is on DynamoDB and they must skip.
pub fn skip_unless_sqlite(test: &str) -> bool {
    if on_dynamodb() {
        eprintln!("{test}: skipped on DynamoDB, it works on the SQLite file");
    }
    on_dynamodb()
}

/// For the tests that need DynamoDB (moto) and have nothing to check on the
/// SQLite file: `true`, with a note saying why, when this run is on SQLite
/// and they must skip (scripts/test runs the suite again on moto).
pub fn skip_unless_dynamodb(test: &str, why: &str) -> bool {
    if !on_dynamodb() {
        eprintln!(
            "{test}: skipped on SQLite: {why} (scripts/test runs the suite again with \
             BLACKBOX_STORE=dynamodb)"
        );
    }
    !on_dynamodb()
}

/// Table names of the server on `data_dir`: the same folder gives the same
/// tables, so a restarted server finds its data again.
fn table_prefix(data_dir: &Path) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    data_dir.hash(&mut hasher);
    format!("bb{}-{:016x}-", std::process::id(), hasher.finish())
}

// ---------------------------------------------------------------------------
// The binary
// ---------------------------------------------------------------------------

/// The `local-server` binary: `LOCAL_SERVER_BIN`, else next to the test
/// executable's profile folder (`target/<profile>/deps/<test>` →
/// `target/<profile>/local-server`).
pub fn server_binary() -> PathBuf {
    if external::base_url().is_some() {
        external::unavailable("the local-server binary");
    }
    let hint = "run `cargo build --workspace --bins` first (or set LOCAL_SERVER_BIN)";
    let path = match std::env::var_os("LOCAL_SERVER_BIN") {
        Some(path) => PathBuf::from(path),
        None => {
            let exe = std::env::current_exe().expect("the test executable has a path");
            let profile_dir = exe
                .parent()
                .and_then(Path::parent)
                .expect("the test executable lives in target/<profile>/deps");
            profile_dir.join(format!("local-server{}", std::env::consts::EXE_SUFFIX))
        }
    };
    assert!(
        path.is_file(),
        "local server binary not found at {}: {hint}",
        path.display()
    );
    path
}

/// A binary of the workspace next to the local server (all are built by
/// `cargo build --workspace --bins`), e.g. the Lambda functions `broadcast`
/// and `live-connect`, which tests run through a Lambda Runtime API.
pub fn workspace_binary(name: &str) -> PathBuf {
    let path = server_binary().with_file_name(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "{name} binary not found at {}: run `cargo build --workspace --bins` first",
        path.display()
    );
    path
}

/// The `nurse-call-admin` binary: `NURSE_CALL_ADMIN_BIN`, else next to the
/// local server (both are built by `cargo build --workspace --bins`).
pub fn admin_binary() -> PathBuf {
    let path = match std::env::var_os("NURSE_CALL_ADMIN_BIN") {
        Some(path) => PathBuf::from(path),
        None => server_binary()
            .with_file_name(format!("nurse-call-admin{}", std::env::consts::EXE_SUFFIX)),
    };
    assert!(
        path.is_file(),
        "admin binary not found at {}: run `cargo build --workspace --bins` first \
         (or set NURSE_CALL_ADMIN_BIN)",
        path.display()
    );
    path
}

/// A finished run of the admin command.
#[derive(Debug, Clone)]
pub struct AdminRun {
    /// The arguments it was run with, for failure messages.
    pub args: Vec<String>,
    /// Its exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    /// What it wrote to stdout (JSON with `--json`).
    pub stdout: String,
    /// What it wrote to stderr: errors and hints for people.
    pub stderr: String,
}

impl AdminRun {
    /// Asserts exit status 0.
    pub fn success(self) -> AdminRun {
        assert_eq!(
            self.code,
            Some(0),
            "admin {:?} failed: {self:#?}",
            self.args
        );
        self
    }

    /// stdout as JSON (pass `--json`).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("admin stdout is not JSON ({e}): {self:#?}"))
    }
}

// ---------------------------------------------------------------------------
// Seed file (production mode)
// ---------------------------------------------------------------------------

/// Consumers and elements for `--seed` (functions/local/src/seed.rs).
#[derive(Debug, Clone, Default)]
pub struct Seed {
    consumers: Vec<Value>,
    elements: Vec<Value>,
}

impl Seed {
    /// A seed without consumers or elements; add them with the builders below.
    pub fn new() -> Self {
        Self::default()
    }

    /// A consumer with one or two secrets (the newest last).
    pub fn consumer(mut self, id: &str, secrets: &[&str], allow_sha1: bool) -> Self {
        self.consumers.push(json!({
            "id": id,
            "name": format!("consumer {id}"),
            "secrets": secrets,
            "allow_sha1": allow_sha1,
        }));
        self
    }

    /// A consumer with replay protection on: every request must carry a
    /// signed `signed_at` (docs/security.md).
    pub fn consumer_requiring_signed_time(mut self, id: &str, secret: &str) -> Self {
        self.consumers.push(json!({
            "id": id,
            "name": format!("consumer {id}"),
            "secrets": [secret],
            "require_signed_time": true,
        }));
        self
    }

    /// Gives the seeded consumer `id` a heartbeat of `seconds` (DECISIONS
    /// §19; 30 to 3600, as the admin command's `--heartbeat`).
    pub fn heartbeat(mut self, id: &str, seconds: i64) -> Self {
        for consumer in &mut self.consumers {
            if consumer["id"] == id {
                consumer["heartbeat_seconds"] = json!(seconds);
            }
        }
        self
    }

    /// Gives the seeded consumer `id` a heartbeat of `seconds` whose last
    /// sign of life was `last_seen` (the store's `last_seen_at`): silent at
    /// `last_seen` + 2 × `seconds` + 10 s, so a test waits seconds, not 70.
    pub fn heartbeat_last_seen(
        mut self,
        id: &str,
        seconds: i64,
        last_seen: chrono::DateTime<chrono::Utc>,
    ) -> Self {
        for consumer in &mut self.consumers {
            if consumer["id"] == id {
                consumer["heartbeat_seconds"] = json!(seconds);
                consumer["heartbeat_last_seen"] = json!(last_seen.to_rfc3339());
            }
        }
        self
    }

    /// A registered element.
    pub fn element(mut self, address: &str, code: &str, name: &str) -> Self {
        self.elements
            .push(json!({"address": address, "code": code, "name": name}));
        self
    }

    fn write(&self, dir: &Path) -> PathBuf {
        let path = dir.join("seed.json");
        let text = json!({"consumers": self.consumers, "elements": self.elements}).to_string();
        std::fs::write(&path, text).expect("seed file written");
        path
    }
}

// ---------------------------------------------------------------------------
// The server process
// ---------------------------------------------------------------------------

/// The mode the server runs in (`--mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The public test service: visitors make their own consumers (DECISIONS §8).
    Sandbox,
    /// An installation: its consumers are seeded or made by an admin, never
    /// by visitors.
    Production,
}

/// How to start a server.
#[derive(Debug, Clone)]
pub struct Options {
    /// Sandbox or production (`--mode`).
    pub mode: Mode,
    /// The consumers and elements of the `--seed` file; `None`: no seed file.
    pub seed: Option<Seed>,
    /// The server's time zone (`--time-zone`, an IANA name); `None`: its
    /// default, Europe/Berlin.
    pub time_zone: Option<String>,
    /// A data folder the caller owns (restart tests); else a fresh temp folder.
    pub data_dir: Option<PathBuf>,
    /// Extra environment variables for the process.
    pub env: Vec<(String, String)>,
    /// The address to listen on (a restart on the same port); else a free port.
    pub listen: Option<String>,
    /// On DynamoDB, the endpoint the server talks to instead of moto's (a
    /// proxy in front of moto, tests/tests/faults.rs); its tables are made
    /// and found there as on moto.
    pub dynamodb_endpoint: Option<String>,
}

impl Options {
    /// A sandbox server: fresh data folder, free port, default time zone.
    pub fn sandbox() -> Self {
        Options {
            mode: Mode::Sandbox,
            seed: None,
            time_zone: None,
            data_dir: None,
            env: Vec::new(),
            listen: None,
            dynamodb_endpoint: None,
        }
    }

    /// A production server seeded with `seed`, otherwise as [`Options::sandbox`].
    pub fn production(seed: Seed) -> Self {
        Options {
            mode: Mode::Production,
            seed: Some(seed),
            ..Options::sandbox()
        }
    }

    /// Runs the server in `zone` (an IANA name).
    pub fn time_zone(mut self, zone: &str) -> Self {
        self.time_zone = Some(zone.to_string());
        self
    }

    /// Keeps the data in `dir`, which the caller owns: it outlives the server
    /// (restart tests).
    pub fn data_dir(mut self, dir: &Path) -> Self {
        self.data_dir = Some(dir.to_path_buf());
        self
    }

    /// Sets a variable of the server's environment, after the harness's own
    /// (so it may override `RUST_LOG`).
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// Talk to DynamoDB at `endpoint` (on DynamoDB runs only).
    pub fn dynamodb_endpoint(mut self, endpoint: &str) -> Self {
        self.dynamodb_endpoint = Some(endpoint.to_string());
        self
    }

    /// Listen on `addr` (`127.0.0.1:PORT`), e.g. the port of a stopped server.
    pub fn listen(mut self, addr: &str) -> Self {
        self.listen = Some(addr.to_string());
        self
    }
}

/// A running `local-server`, killed when dropped; or the external service
/// ([`external`]), which has no process, logs or data folder of the test's.
pub struct Server {
    /// `None` for the external service.
    child: Option<Child>,
    reader: Option<JoinHandle<()>>,
    logs: Arc<Mutex<Vec<String>>>,
    /// The server's stderr, line by line (also passed on to the test's stderr).
    stderr_reader: Option<JoinHandle<()>>,
    stderr_lines: Arc<Mutex<Vec<String>>>,
    base: String,
    client: reqwest::Client,
    data_dir: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl Server {
    /// A sandbox server on a fresh data folder.
    pub fn sandbox() -> Server {
        Server::start(Options::sandbox())
    }

    /// A production server on a fresh data folder with `seed` applied.
    pub fn production(seed: Seed) -> Server {
        Server::start(Options::production(seed))
    }

    /// Starts `local-server` with `options` and waits up to 20 s for its
    /// `listening` line. With `BLACKBOX_BASE_URL` set it starts nothing and talks
    /// to that service, which only plain sandbox options fit.
    pub fn start(options: Options) -> Server {
        if let Some(base) = external::base_url() {
            external::check_options(&options);
            return Server {
                child: None,
                reader: None,
                logs: Arc::default(),
                stderr_reader: None,
                stderr_lines: Arc::default(),
                base,
                client: http_client(),
                data_dir: PathBuf::new(),
                _temp: None,
            };
        }
        let temp = match options.data_dir {
            Some(_) => None,
            None => Some(tempfile::tempdir().expect("temp data folder")),
        };
        let data_dir = options
            .data_dir
            .clone()
            .unwrap_or_else(|| temp.as_ref().expect("temp folder").path().to_path_buf());

        let mut command = Command::new(server_binary());
        command
            .arg("--listen")
            .arg(options.listen.as_deref().unwrap_or("127.0.0.1:0"))
            .arg("--data-dir")
            .arg(&data_dir)
            .arg("--mode")
            .arg(match options.mode {
                Mode::Sandbox => "sandbox",
                Mode::Production => "production",
            });
        if let Some(seed) = &options.seed {
            command.arg("--seed").arg(seed.write(&data_dir));
        }
        if let Some(zone) = &options.time_zone {
            command.arg("--time-zone").arg(zone);
        }
        // The flags above decide; nothing of the caller's environment may.
        for name in [
            "SERVICE_MODE",
            "SERVICE_TIME_ZONE",
            "LISTEN_ADDR",
            "DATA_DIR",
            "SEED_FILE",
            "DYNAMODB_ENDPOINT",
            "DISPLAY_LIVE_URL",
        ] {
            command.env_remove(name);
        }
        if on_dynamodb() {
            let endpoint = options
                .dynamodb_endpoint
                .clone()
                .unwrap_or_else(store_conformance::moto::endpoint);
            command
                .arg("--dynamodb-endpoint")
                .arg(endpoint)
                .env("TABLE_PREFIX", table_prefix(&data_dir))
                // moto handles one request at a time and copies whole tables
                // per transaction: under the concurrency tests it is far slower
                // than DynamoDB, so the SDK may wait longer than in AWS.
                .env("DYNAMODB_ATTEMPT_TIMEOUT_MS", "10000")
                .env("DYNAMODB_OPERATION_TIMEOUT_MS", "30000");
        }
        // `info` (the deployed level) unless the options ask for another.
        command.env("RUST_LOG", "info");
        command.env("PUSH_SERVICES", TEST_PUSH_SERVICES);
        // The suite sends many unauthenticated requests from one address
        // (failed signatures, pages, sandbox consumers): no rate unless a
        // test asks for one (tests/tests/floods.rs).
        command
            .env("RATE_PER_SECOND", "1000000")
            .env("RATE_BURST", "1000000");
        for (name, value) in &options.env {
            command.env(name, value);
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("local server starts");

        // Keep stderr too (tests look for secrets in everything the server
        // writes), and show it as before.
        let stderr = child.stderr.take().expect("stderr is piped");
        let stderr_lines = Arc::new(Mutex::new(Vec::new()));
        let stderr_reader = {
            let lines = Arc::clone(&stderr_lines);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    eprintln!("{line}");
                    lines.lock().expect("stderr lock").push(line);
                }
            })
        };

        // Read stdout until the `listening` line, then keep draining it so the
        // server never blocks on a full pipe.
        let stdout = child.stdout.take().expect("stdout is piped");
        let logs = Arc::new(Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = mpsc::channel::<String>();
        let reader = {
            let logs = Arc::clone(&logs);
            std::thread::spawn(move || {
                let mut addr_tx = Some(addr_tx);
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if addr_tx.is_some()
                        && let Ok(entry) = serde_json::from_str::<Value>(&line)
                        && entry["message"] == "listening"
                        && let Some(addr) = entry["addr"].as_str()
                        && let Some(tx) = addr_tx.take()
                    {
                        let _ = tx.send(addr.to_string());
                    }
                    logs.lock().expect("log lock").push(line);
                }
            })
        };
        let addr = match addr_rx.recv_timeout(START_TIMEOUT) {
            Ok(addr) => addr,
            Err(error) => {
                let _ = child.kill();
                let _ = child.wait();
                let logs = logs.lock().expect("log lock").join("\n");
                panic!("local server did not log `listening` ({error}); its output:\n{logs}");
            }
        };
        Server {
            child: Some(child),
            reader: Some(reader),
            logs,
            stderr_reader: Some(stderr_reader),
            stderr_lines,
            base: format!("http://{addr}"),
            client: http_client(),
            data_dir,
            _temp: temp,
        }
    }

    /// The process, which only a server the test started has.
    fn child(&self, what: &str) -> &Child {
        self.child
            .as_ref()
            .unwrap_or_else(|| external::unavailable(what))
    }

    fn child_mut(&mut self, what: &str) -> &mut Child {
        self.child
            .as_mut()
            .unwrap_or_else(|| external::unavailable(what))
    }

    /// `http://127.0.0.1:PORT`
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// The server's data folder (its SQLite file, the seed file); the test's own
    /// when it passed one.
    pub fn data_dir(&self) -> &Path {
        self.child("the server's data folder");
        &self.data_dir
    }

    /// The prefix of this server's table names on moto (`<prefix>data`, …),
    /// for tests that reach its tables (and their streams) directly.
    pub fn table_prefix(&self) -> String {
        table_prefix(&self.data_dir)
    }

    /// The server process's id, for signals other than [`Server::terminate`]'s
    /// and [`Server::kill`]'s.
    pub fn pid(&self) -> u32 {
        self.child("the server's process id").id()
    }

    /// The JSON log lines the server wrote so far.
    pub fn logs(&self) -> Vec<String> {
        self.child("the server's logs");
        self.logs.lock().expect("log lock").clone()
    }

    /// The JSON log lines once `enough` holds for them, or after 5 s (then
    /// the caller's assertion says what is missing). The log reaches the
    /// test through a pipe and a reader thread, so a line can arrive just
    /// after the answer of the request that wrote it.
    pub fn logs_once(&self, enough: impl Fn(&[String]) -> bool) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let lines = self.logs();
            if enough(&lines) || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The lines the server wrote to stderr so far.
    pub fn stderr_lines(&self) -> Vec<String> {
        self.child("the server's stderr");
        self.stderr_lines.lock().expect("stderr lock").clone()
    }

    /// Everything the server wrote, stdout then stderr. Complete once the
    /// server has exited ([`Server::terminate`]).
    pub fn all_output(&self) -> String {
        let mut lines = self.logs();
        lines.extend(self.stderr_lines());
        lines.join("\n")
    }

    /// Runs the admin command (`nurse-call-admin`) on this server's store:
    /// its SQLite file, or its tables on moto.
    pub fn admin(&self, args: &[&str]) -> AdminRun {
        self.child("the admin command on the server's store");
        let mut command = Command::new(admin_binary());
        for name in [
            "DATA_DIR",
            "DYNAMODB_ENDPOINT",
            "TABLE_PREFIX",
            "CALL_TYPES_TABLE",
            "CONSUMERS_TABLE",
            "DATA_TABLE",
        ] {
            command.env_remove(name);
        }
        command.arg("--data-dir").arg(&self.data_dir);
        if on_dynamodb() {
            command
                .arg("--dynamodb-endpoint")
                .arg(store_conformance::moto::endpoint())
                .env("TABLE_PREFIX", table_prefix(&self.data_dir))
                .env("DYNAMODB_ATTEMPT_TIMEOUT_MS", "10000")
                .env("DYNAMODB_OPERATION_TIMEOUT_MS", "30000");
        }
        command
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null());
        let output = command.output().expect("nurse-call-admin runs");
        AdminRun {
            args: args.iter().map(|a| a.to_string()).collect(),
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Kills the process with SIGKILL, as a crash would (no shutdown, nothing
    /// flushed), and waits for it.
    pub fn kill(&mut self) -> ExitStatus {
        self.child_mut("killing the server")
            .kill()
            .expect("SIGKILL sent");
        self.wait_exit()
    }

    /// Sends SIGTERM and waits for the process to exit (with a timeout).
    pub fn terminate(&mut self) -> ExitStatus {
        self.send_sigterm();
        self.wait_exit()
    }

    /// Sends SIGTERM without waiting.
    pub fn send_sigterm(&self) {
        let pid = libc::pid_t::try_from(self.child("a signal to the server").id())
            .expect("pid fits pid_t");
        // SAFETY: `kill` only sends a signal to our own child process.
        let sent = unsafe { libc::kill(pid, libc::SIGTERM) };
        assert_eq!(sent, 0, "SIGTERM could not be sent");
    }

    /// Whether the process has exited.
    pub fn has_exited(&mut self) -> bool {
        self.child_mut("the server's exit")
            .try_wait()
            .expect("wait for the server")
            .is_some()
    }

    /// Waits for the process to exit (with a timeout).
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            let child = self.child_mut("the server's exit");
            if let Some(status) = child.try_wait().expect("wait for the server") {
                if let Some(reader) = self.reader.take() {
                    let _ = reader.join();
                }
                if let Some(reader) = self.stderr_reader.take() {
                    let _ = reader.join();
                }
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "server did not exit within {STOP_TIMEOUT:?} of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's HTTP client (no proxy, 30 s per request), for requests a test
    /// sends itself, e.g. many at once from spawned tasks; their answers are not
    /// checked against docs/openapi.yaml.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Any request with exact body bytes and an optional Content-Type.
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        headers: &[(&str, &str)],
        body: impl Into<Vec<u8>>,
    ) -> Response {
        let method_name = method.clone();
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .body(body.into());
        if let Some(content_type) = content_type {
            request = request.header("Content-Type", content_type);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = if self.child.is_none() {
            external::send_once_more_if_lost(request).await
        } else {
            request.send().await.expect("request reaches the server")
        };
        let response = Response::read(response).await;
        openapi::check(method_name.as_str(), path, &response);
        response
    }

    /// Sends `request` byte for byte on a new connection, so that no client
    /// library normalises the path (`/../`, `%2e%2e`) or the headers; reads
    /// the answer until the server closes the connection (send
    /// `Connection: close`). `half_close` shuts the writing side after the
    /// bytes, like a client that gives up before the announced body length.
    pub fn raw(&self, request: &[u8], half_close: bool) -> Response {
        use std::io::{Read, Write};
        let addr = self.base.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(addr).expect("connect to the server");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("read timeout");
        stream.write_all(request).expect("request written");
        if half_close {
            stream
                .shutdown(std::net::Shutdown::Write)
                .expect("half close");
        }
        let mut answer = Vec::new();
        // A reset after the answer (the server closing on unread input) ends
        // the reading as well.
        let _ = stream.read_to_end(&mut answer);
        let response = parse_raw_response(&answer);
        openapi::check_raw(request, &response);
        response
    }

    /// `raw` for one request with a `Content-Type` (if any) and a body, with
    /// `Content-Length` and `Connection: close`; `target` goes into the
    /// request line exactly as given.
    pub fn raw_request(
        &self,
        method: &str,
        target: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Response {
        let mut request = format!(
            "{method} {target} HTTP/1.1\r\nHost: {}\r\n",
            self.base.trim_start_matches("http://")
        );
        if let Some(content_type) = content_type {
            request.push_str(&format!("Content-Type: {content_type}\r\n"));
        }
        request.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ));
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(body);
        self.raw(&bytes, false)
    }

    /// POST with `Content-Type: application/json` and exactly these bytes.
    pub async fn post(&self, path: &str, body: impl Into<Vec<u8>>) -> Response {
        self.request(Method::POST, path, Some("application/json"), &[], body)
            .await
    }

    /// GET `path` (with its query, if any); the answer is checked against
    /// docs/openapi.yaml like every other.
    pub async fn get(&self, path: &str) -> Response {
        self.request(Method::GET, path, None, &[], Vec::new()).await
    }

    /// `POST /api/v1/sandbox/consumers`, asserting 201.
    pub async fn new_consumer(&self) -> Consumer {
        let response = self.post(SANDBOX_CONSUMERS, "").await;
        response.expect_status(201);
        let data = response.data();
        Consumer {
            id: data["consumer"].as_str().expect("consumer id").to_string(),
            secret: data["secret"].as_str().expect("secret").to_string(),
        }
    }

    /// A signed display request; `data` is sent exactly as given.
    pub async fn display(&self, consumer: &Consumer, target: &str, data: &str) -> Response {
        self.post(DISPLAY, consumer.body(target, data)).await
    }

    /// A signed display request with a query string (`include=type`).
    pub async fn display_query(
        &self,
        query: &str,
        consumer: &Consumer,
        target: &str,
        data: &str,
    ) -> Response {
        self.post(&format!("{DISPLAY}?{query}"), consumer.body(target, data))
            .await
    }

    /// A signed single-form element request.
    pub async fn element(&self, consumer: &Consumer, target: &str, data: &str) -> Response {
        self.post(ELEMENT, consumer.body(target, data)).await
    }

    /// A signed multi-form element request (no top-level target).
    pub async fn element_multi(&self, consumer: &Consumer, data: &str) -> Response {
        self.post(ELEMENT, consumer.multi_body(data)).await
    }

    /// `GET /api/v1/sandbox/state?consumer=…&hash=…`: the `data` object,
    /// asserting 200.
    pub async fn state(&self, consumer: &Consumer) -> Value {
        let response = self
            .get(&format!(
                "{SANDBOX_STATE}?consumer={}&hash={}",
                consumer.id,
                consumer.proof()
            ))
            .await;
        response.expect_status(200);
        response.data()
    }

    /// [`Server::state`] without the `duration` of the calls (it grows while
    /// a call is open), for comparing the state before and after.
    pub async fn stable_state(&self, consumer: &Consumer) -> Value {
        let mut state = self.state(consumer).await;
        for call in state["calls"].as_array_mut().expect("calls").iter_mut() {
            call.as_object_mut().expect("a call").remove("duration");
        }
        state
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        if let Some(reader) = self.stderr_reader.take() {
            let _ = reader.join();
        }
        if std::thread::panicking() {
            self.show_warnings();
        }
    }
}

/// How many of a failed test's server warnings and errors are shown.
const WARNINGS_SHOWN: usize = 40;

impl Server {
    /// For a failed test: the server's last warnings and errors on the
    /// test's stderr (shown with the failure), since the log itself is kept
    /// in memory only and a failure in CI can rarely be run again.
    fn show_warnings(&self) {
        let Ok(logs) = self.logs.lock() else { return };
        let warnings: Vec<&String> = logs
            .iter()
            .filter(|line| {
                line.contains(r#""level":"WARN""#) || line.contains(r#""level":"ERROR""#)
            })
            .collect();
        eprintln!(
            "the server at {} logged {} warnings and errors{}",
            self.base,
            warnings.len(),
            if warnings.len() > WARNINGS_SHOWN {
                format!(", the last {WARNINGS_SHOWN}:")
            } else {
                ":".into()
            }
        );
        for line in &warnings[warnings.len().saturating_sub(WARNINGS_SHOWN)..] {
            eprintln!("  {line}");
        }
    }
}

/// The HTTP client of a [`Server`]: no proxy (loopback), a timeout per request.
fn http_client() -> reqwest::Client {
    http_client_waiting(Duration::from_secs(30))
}

/// A client like a [`Server`]'s that waits up to `timeout` per request.
pub fn http_client_waiting(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .build()
        .expect("HTTP client")
}

// ---------------------------------------------------------------------------
// Holding the embedded store's write lock (like an admin command would)
// ---------------------------------------------------------------------------

/// An open write transaction on the server's SQLite file: the server's writes
/// wait for it (and give up after the store's busy timeout). Released on drop.
pub struct StoreLock {
    connection: rusqlite::Connection,
}

/// A second connection to the server's store: the one `*.sqlite3` file in
/// `data_dir` (what an admin command on the same file would open).
pub fn open_store_file(data_dir: &Path) -> rusqlite::Connection {
    let file = std::fs::read_dir(data_dir)
        .expect("data folder readable")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "sqlite3"))
        .expect("a SQLite file in the data folder");
    let connection = rusqlite::Connection::open(file).expect("store file opens");
    connection
        .busy_timeout(Duration::from_secs(5))
        .expect("busy timeout set");
    connection
}

impl StoreLock {
    /// Takes the write lock of the server's store file.
    pub fn take(data_dir: &Path) -> StoreLock {
        let connection = open_store_file(data_dir);
        connection
            .execute_batch("BEGIN IMMEDIATE")
            .expect("write lock taken");
        StoreLock { connection }
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        let _ = self.connection.execute_batch("ROLLBACK");
    }
}

// ---------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------

/// What the client saw: status, headers and the body text.
#[derive(Debug, Clone)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// The headers, every value of a repeated one kept.
    pub headers: HeaderMap,
    /// The body, decoded as UTF-8.
    pub text: String,
}

impl Response {
    async fn read(response: reqwest::Response) -> Response {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("response body");
        Response {
            status,
            headers,
            text,
        }
    }

    /// Panics with the body when the status differs.
    pub fn expect_status(&self, status: u16) -> &Self {
        assert_eq!(
            self.status, status,
            "unexpected status; body: {}",
            self.text
        );
        self
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text))
    }

    /// `data` of a success body.
    pub fn data(&self) -> Value {
        let body = self.json();
        assert_eq!(body["success"], true, "not a success body: {}", self.text);
        body["data"].clone()
    }

    /// The raw text of `data`, for key order checks.
    pub fn raw_data(&self) -> String {
        #[derive(serde::Deserialize)]
        struct Body<'a> {
            #[serde(borrow)]
            data: &'a RawValue,
        }
        let body: Body<'_> = serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("no data in body ({e}): {}", self.text));
        body.data.get().to_string()
    }

    /// The first value of header `name` (any case); `None` when it is missing or
    /// not visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Every value of a header.
    pub fn header_all(&self, name: &str) -> Vec<String> {
        self.headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect()
    }
}

/// An HTTP/1.1 answer read off a socket: status line, headers, and the body
/// (`Content-Length` bytes, or everything up to the close).
pub fn parse_raw_response(answer: &[u8]) -> Response {
    use reqwest::header::{HeaderName, HeaderValue};
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| {
            panic!(
                "no complete HTTP answer: {:?}",
                String::from_utf8_lossy(answer)
            )
        });
    let head = String::from_utf8_lossy(&answer[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {status_line:?}"));
    let mut headers = HeaderMap::new();
    for line in lines {
        if let Some((name, value)) = line.split_once(':')
            && let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.trim().as_bytes()),
                HeaderValue::from_str(value.trim()),
            )
        {
            headers.append(name, value);
        }
    }
    let mut body = &answer[split + 4..];
    if let Some(length) = headers
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
    {
        body = &body[..length.min(body.len())];
    }
    Response {
        status,
        headers,
        text: String::from_utf8_lossy(body).into_owned(),
    }
}

/// The keys of a JSON object text, in the order written.
pub fn object_keys(text: &str) -> Vec<String> {
    struct Keys(Vec<String>);
    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Keys, A::Error> {
                    let mut keys = Vec::new();
                    while let Some(key) = map.next_key::<String>()? {
                        map.next_value::<serde::de::IgnoredAny>()?;
                        keys.push(key);
                    }
                    Ok(Keys(keys))
                }
            }
            d.deserialize_map(V)
        }
    }
    serde_json::from_str::<Keys>(text)
        .unwrap_or_else(|e| panic!("not a JSON object ({e}): {text}"))
        .0
}

/// The raw text of member `key` of a JSON object text.
pub fn raw_member(text: &str, key: &str) -> String {
    let members: std::collections::HashMap<String, &RawValue> =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not a JSON object ({e}): {text}"));
    members
        .get(key)
        .unwrap_or_else(|| panic!("no {key:?} in {text}"))
        .get()
        .to_string()
}

/// The raw texts of the items of a JSON array text.
pub fn array_items(text: &str) -> Vec<String> {
    let items: Vec<&RawValue> =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not a JSON array ({e}): {text}"));
    items.into_iter().map(|raw| raw.get().to_string()).collect()
}

/// The expected body of an error in the array shape (spec 7.2, DECISIONS §3).
pub fn error_body(code: &str, status: u16, text: &str) -> String {
    format!(
        r#"{{"success":false,"messages":[{{"code":"{code}","status_code":{status},"errors":{}}}]}}"#,
        json_string(text)
    )
}

/// `400 invalid_hash` without `debug`.
pub fn invalid_hash_body() -> String {
    error_body("invalid_hash", 400, "Ungültiger Hash.")
}

/// The expected body of a 422 (spec 7.1): `errors` in exactly this key order.
pub fn validation_body(errors: &[(&str, &[&str])]) -> String {
    let fields: Vec<String> = errors
        .iter()
        .map(|(key, messages)| {
            let messages: Vec<String> = messages.iter().map(|m| json_string(m)).collect();
            format!("{}:[{}]", json_string(key), messages.join(","))
        })
        .collect();
    format!(
        r#"{{"success":false,"messages":{{"code":"validation_failed","status_code":422,"errors":{{{}}}}}}}"#,
        fields.join(",")
    )
}

/// A JSON string literal (UTF-8 as is, like the service writes it).
pub fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("strings serialise")
}

// ---------------------------------------------------------------------------
// Signing
// ---------------------------------------------------------------------------

/// Lowercase hex HMAC-SHA256 of `message` keyed by `secret` (UTF-8 bytes).
pub fn hmac_sha256_hex(secret: &str, message: &str) -> String {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("any key");
    mac.update(message.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// Lowercase hex HMAC-SHA1.
pub fn hmac_sha1_hex(secret: &str, message: &str) -> String {
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(secret.as_bytes()).expect("any key");
    mac.update(message.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// `data_json` of DECISIONS §2: the text with JSON whitespace outside string
/// literals removed, nothing else changed.
pub fn compact_json(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {}
            '"' => {
                out.push('"');
                // Copy the string literal verbatim, escapes included.
                while let Some(c) = chars.next() {
                    out.push(c);
                    match c {
                        '\\' => out.extend(chars.next()),
                        '"' => break,
                        _ => {}
                    }
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// `<target>.<consumer>.<data_json>`.
pub fn signing_string(target: &str, consumer: &str, data: &str) -> String {
    format!("{target}.{consumer}.{}", compact_json(data))
}

/// A request body `{"target":…,"consumer":…,"hash":…,"data":<data>}` with
/// `data` inserted verbatim; `target` `None` leaves the key out.
pub fn envelope(target: Option<&str>, consumer: &str, hash: &str, data: &str) -> String {
    let target = target
        .map(|t| format!(r#""target":{},"#, json_string(t)))
        .unwrap_or_default();
    format!(
        r#"{{{target}"consumer":{},"hash":{},"data":{data}}}"#,
        json_string(consumer),
        json_string(hash)
    )
}

/// A consumer id and its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consumer {
    /// The consumer id (a lowercase UUID), sent as `consumer` in every body.
    pub id: String,
    /// The shared secret the bodies are signed with (HMAC-SHA256).
    pub secret: String,
}

impl Consumer {
    /// A consumer the test already knows, e.g. one of its seed file.
    pub fn new(id: &str, secret: &str) -> Self {
        Consumer {
            id: id.to_string(),
            secret: secret.to_string(),
        }
    }

    /// HMAC-SHA256 over `<target>.<id>.<data_json>`.
    pub fn sign(&self, target: &str, data: &str) -> String {
        hmac_sha256_hex(&self.secret, &signing_string(target, &self.id, data))
    }

    /// A signed single-target body.
    pub fn body(&self, target: &str, data: &str) -> String {
        envelope(Some(target), &self.id, &self.sign(target, data), data)
    }

    /// A signed multi-form body: empty target in the signing string.
    pub fn multi_body(&self, data: &str) -> String {
        envelope(None, &self.id, &self.sign("", data), data)
    }

    /// The sandbox proof: HMAC-SHA256 of the consumer id keyed by the secret.
    pub fn proof(&self) -> String {
        hmac_sha256_hex(&self.secret, &self.id)
    }

    /// The test page's cookie pair for this consumer, `nc_sandbox=<id>.<proof>`.
    pub fn cookie(&self) -> String {
        format!("nc_sandbox={}.{}", self.id, self.proof())
    }
}

// ---------------------------------------------------------------------------
// Times and shapes
// ---------------------------------------------------------------------------

/// Reads a wire time `YYYY-MM-DD HH:MM:SS`, panicking on any other shape.
pub fn wire_time(text: &str) -> chrono::NaiveDateTime {
    assert_eq!(text.len(), 19, "not a wire time: {text:?}");
    chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S")
        .unwrap_or_else(|e| panic!("not a wire time ({e}): {text:?}"))
}

/// The current wall time in `zone` (an IANA name).
pub fn now_in(zone: &str) -> chrono::NaiveDateTime {
    let zone: chrono_tz::Tz = zone.parse().expect("IANA zone");
    chrono::Utc::now().with_timezone(&zone).naive_local()
}

/// Asserts that `text` is a wire time within a few seconds of now in `zone`.
pub fn assert_now_in(text: &str, zone: &str) {
    let shown = wire_time(text);
    let now = now_in(zone);
    let skew = (now - shown).num_seconds().abs();
    assert!(
        skew <= 5,
        "{text} is not the current time in {zone} (now {now})"
    );
}

/// Whether `text` is a UUID version 4 in canonical lowercase form.
pub fn is_uuid_v4(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            14 => *b == b'4',
            19 => matches!(b, b'8' | b'9' | b'a' | b'b'),
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(b),
        })
}

/// The call with `id` in a list of call records.
pub fn call_by_id(calls: &Value, id: i64) -> Option<Value> {
    calls
        .as_array()
        .expect("calls is an array")
        .iter()
        .find(|call| call["id"] == id)
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_keeps_strings_and_escapes() {
        assert_eq!(
            compact_json("{\n  \"a b\" : \"x\\\" y\\\\\" ,\t\"n\": [1, 2.0 ]\r\n}"),
            r#"{"a b":"x\" y\\","n":[1,2.0]}"#
        );
        assert_eq!(
            compact_json(r#"{ "p": "1\/2 \u00e4" }"#),
            r#"{"p":"1\/2 \u00e4"}"#
        );
    }

    #[test]
    fn hmac_known_answers() {
        // RFC 4231-style public vectors (Wikipedia HMAC examples).
        assert_eq!(
            hmac_sha256_hex("key", "The quick brown fox jumps over the lazy dog"),
            "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
        );
        assert_eq!(
            hmac_sha1_hex("key", "The quick brown fox jumps over the lazy dog"),
            "de7c9b85b8b78aa6bc8a7a36f70a90701c9db4d9"
        );
    }

    #[test]
    fn envelope_shape() {
        assert_eq!(
            envelope(Some("A"), "c", "h", "{}"),
            r#"{"target":"A","consumer":"c","hash":"h","data":{}}"#
        );
        assert_eq!(
            envelope(None, "c", "h", "[]"),
            r#"{"consumer":"c","hash":"h","data":[]}"#
        );
    }

    #[test]
    fn key_order() {
        assert_eq!(object_keys(r#"{"b":1,"a":{"z":2}}"#), ["b", "a"]);
        assert_eq!(array_items("[1, {\"a\":2}]"), ["1", "{\"a\":2}"]);
    }
}
