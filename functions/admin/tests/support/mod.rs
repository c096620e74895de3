//! Harness of the admin command's tests: runs `nurse-call-admin` as a process,
//! starts the `local-server` binary in production mode on the same store (the
//! SQLite file of a temp folder, or tables of their own on moto), and sends
//! signed requests to it the way a central system does.

// Each test file uses a part of the harness.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use hmac::{Hmac, Mac};
pub(crate) use serde_json::{Value, json};

/// Variables of the caller's environment that would pick another store, or
/// another zone than the tests' Europe/Berlin.
const STORE_VARIABLES: [&str; 10] = [
    "DATA_DIR",
    "DYNAMODB_ENDPOINT",
    "TABLE_PREFIX",
    "CALL_TYPES_TABLE",
    "CONSUMERS_TABLE",
    "DATA_TABLE",
    "SERVICE_MODE",
    "LISTEN_ADDR",
    "SEED_FILE",
    "SERVICE_TIME_ZONE",
];

/// Where the server and the admin command keep the data.
pub(crate) enum Backend {
    /// The embedded store in a temp folder.
    Sqlite(tempfile::TempDir),
    /// moto, with table names of this test's own.
    Dynamo { endpoint: String, prefix: String },
}

impl Backend {
    /// An embedded store made with `nurse-call-admin init`, as an admin
    /// makes one (the admin command works on no store it did not find).
    pub(crate) fn sqlite() -> Self {
        let backend = Backend::Sqlite(tempfile::tempdir().expect("temp data folder"));
        backend.admin(&["init"]).success();
        backend
    }

    /// Table names of this test's own, none of them made yet: the server
    /// ([`Backend::server`]) or [`Backend::open`] make them, as the stack
    /// does in AWS.
    pub(crate) fn dynamodb() -> Self {
        Backend::Dynamo {
            endpoint: store_conformance::moto::endpoint(),
            prefix: store_conformance::moto::unique_prefix(),
        }
    }

    /// Points `command` at this store: flags for the folder and the endpoint,
    /// the table prefix through the environment (as the CDK stack sets it).
    fn configure(&self, command: &mut Command) {
        for name in STORE_VARIABLES {
            command.env_remove(name);
        }
        match self {
            Backend::Sqlite(dir) => {
                command.arg("--data-dir").arg(dir.path());
            }
            Backend::Dynamo { endpoint, prefix } => {
                command
                    .arg("--dynamodb-endpoint")
                    .arg(endpoint)
                    .env("TABLE_PREFIX", prefix)
                    // moto is far slower than DynamoDB (README, configuration).
                    .env("DYNAMODB_ATTEMPT_TIMEOUT_MS", "10000")
                    .env("DYNAMODB_OPERATION_TIMEOUT_MS", "30000");
            }
        }
    }

    /// Runs `nurse-call-admin` on this store with `args`.
    pub(crate) fn admin(&self, args: &[&str]) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_nurse-call-admin"));
        self.configure(&mut command);
        command.args(args);
        Run::of(command)
    }

    /// Starts `nurse-call-admin` on this store with `args`, stdout and stderr
    /// piped, for tests of how it writes.
    pub(crate) fn spawn_admin(&self, args: &[&str]) -> Child {
        let mut command = Command::new(env!("CARGO_BIN_EXE_nurse-call-admin"));
        self.configure(&mut command);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nurse-call-admin starts")
    }

    /// Like [`Backend::admin`], with these environment variables set.
    pub(crate) fn admin_with_env(&self, args: &[&str], variables: &[(&str, &str)]) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_nurse-call-admin"));
        self.configure(&mut command);
        command.envs(variables.iter().copied()).args(args);
        Run::of(command)
    }

    /// Like [`Backend::admin`], expecting success; returns stdout as JSON
    /// (pass `--json`).
    pub(crate) fn admin_json(&self, args: &[&str]) -> Value {
        self.admin(args).success().json()
    }

    /// Starts the local server in production mode on this store.
    pub(crate) fn server(&self) -> Server {
        Server::start(self)
    }

    /// The same store opened in this process, made ready as the local
    /// server makes it (tables created, call types seeded): for what no
    /// command writes, such as alarms as the engine leaves them.
    pub(crate) async fn open(&self) -> Arc<dyn nurse_call_core::Backend> {
        let choice = match self {
            Backend::Sqlite(dir) => nurse_call_wiring::StoreChoice::Embedded {
                data_dir: dir.path().to_path_buf(),
            },
            Backend::Dynamo { endpoint, prefix } => nurse_call_wiring::StoreChoice::DynamoDb {
                endpoint: Some(endpoint.clone()),
                tables: nurse_call_wiring::TableNames::with_prefix(prefix),
            },
        };
        choice
            .open_prepared(nurse_call_core::CallRetention::default())
            .await
            .expect("the store opens")
    }
}

/// `nurse-call-admin` with `args` only, in working folder `cwd`: no store
/// option, none from the environment.
pub(crate) fn admin_without_store(cwd: &Path, args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nurse-call-admin"));
    for name in STORE_VARIABLES {
        command.env_remove(name);
    }
    command.current_dir(cwd).args(args);
    Run::of(command)
}

/// A finished admin run.
#[derive(Debug)]
pub(crate) struct Run {
    pub args: String,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Runs `command` with no input.
    pub(crate) fn of(mut command: Command) -> Run {
        let args = format!("{:?}", command.get_args().collect::<Vec<_>>());
        let output = command
            .stdin(Stdio::null())
            .output()
            .expect("nurse-call-admin runs");
        Run {
            args,
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    pub(crate) fn success(self) -> Run {
        assert_eq!(self.code, Some(0), "admin {} failed: {self:#?}", self.args);
        self
    }

    /// Asserts a failure with exit status `code` and a message on stderr
    /// containing `text`; nothing on stdout.
    pub(crate) fn fails(self, code: i32, text: &str) -> Run {
        assert_eq!(
            self.code,
            Some(code),
            "unexpected exit status of admin {}: {self:#?}",
            self.args
        );
        assert!(
            self.stderr.contains(text),
            "no {text:?} in stderr: {self:#?}"
        );
        assert!(
            self.stdout.is_empty(),
            "a failure printed a result: {self:#?}"
        );
        self
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:#?}"))
    }
}

/// The `local-server` binary: `LOCAL_SERVER_BIN`, else next to this test's
/// profile folder (`target/<profile>/deps/<test>` → `target/<profile>/local-server`).
fn server_binary() -> PathBuf {
    let path = match std::env::var_os("LOCAL_SERVER_BIN") {
        Some(path) => PathBuf::from(path),
        None => std::env::current_exe()
            .expect("the test executable has a path")
            .parent()
            .and_then(Path::parent)
            .expect("the test executable lives in target/<profile>/deps")
            .join(format!("local-server{}", std::env::consts::EXE_SUFFIX)),
    };
    assert!(
        path.is_file(),
        "local server binary not found at {}: run `cargo build --workspace --bins` first \
         (or set LOCAL_SERVER_BIN)",
        path.display()
    );
    path
}

/// A running local server in production mode; killed when dropped.
pub(crate) struct Server {
    child: Child,
    base: String,
    client: reqwest::Client,
    _folder: Option<tempfile::TempDir>,
}

impl Server {
    fn start(backend: &Backend) -> Server {
        let mut command = Command::new(server_binary());
        backend.configure(&mut command);
        // On DynamoDB the server gets a data folder it does not use.
        let folder = matches!(backend, Backend::Dynamo { .. })
            .then(|| tempfile::tempdir().expect("temp folder"));
        if let Some(folder) = &folder {
            command.arg("--data-dir").arg(folder.path());
        }
        command
            .args(["--listen", "127.0.0.1:0", "--mode", "production"])
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn().expect("the local server starts");

        // Read stdout up to the `listening` line, then keep draining it.
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(entry) = serde_json::from_str::<Value>(&line)
                    && entry["message"] == "listening"
                    && let (Some(addr), Some(tx)) = (entry["addr"].as_str(), tx.take())
                {
                    let _ = tx.send(addr.to_string());
                }
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(addr) => addr,
            Err(error) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the local server did not log `listening`: {error}");
            }
        };
        Server {
            child,
            base: format!("http://{addr}"),
            client: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("HTTP client"),
            _folder: folder,
        }
    }

    /// POSTs `body` as JSON; returns the status and the body as JSON.
    pub(crate) async fn post(&self, path: &str, body: String) -> (u16, Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .expect("the request reaches the server");
        let status = response.status().as_u16();
        (status, response.json().await.expect("a JSON body"))
    }

    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("the request reaches the server");
        let status = response.status().as_u16();
        (status, response.json().await.expect("a JSON body"))
    }

    /// `POST /api/v1/element` for `target`, signed by `consumer` with `secret`.
    pub(crate) async fn update_element(&self, consumer: &str, secret: &str, target: &str) -> u16 {
        let body = signed_body(consumer, secret, target, r#"{"battery":80}"#);
        self.post("/api/v1/element", body).await.0
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A request body signed as DECISIONS §2 says: hex HMAC-SHA256 of
/// `<target>.<consumer>.<data>` keyed with the secret (`data` compact JSON).
pub(crate) fn signed_body(consumer: &str, secret: &str, target: &str, data: &str) -> String {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("any key");
    mac.update(format!("{target}.{consumer}.{data}").as_bytes());
    let hash = hex::encode(mac.finalize().into_bytes());
    format!(
        r#"{{"target":{},"consumer":"{consumer}","hash":"{hash}","data":{data}}}"#,
        serde_json::to_string(target).expect("strings serialise")
    )
}

/// Each scenario once on SQLite and once on DynamoDB (a test module per
/// store, so a failure names the store).
macro_rules! on_both_stores {
    ($($scenario:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $scenario() {
                    super::$scenario(super::Backend::sqlite()).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test]
                async fn $scenario() {
                    super::$scenario(super::Backend::dynamodb()).await;
                }
            )*
        }
    };
}
