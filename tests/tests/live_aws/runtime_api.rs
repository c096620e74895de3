//! A Lambda Runtime API (2018-06-01) on loopback, and a function's real
//! binary running against it the way Lambda runs `bootstrap`: the function
//! asks `GET /runtime/invocation/next`, gets an event with the request id,
//! deadline and function ARN in headers, and posts its answer to
//! `/runtime/invocation/{id}/response` (or `/error`).
//! (bench/cold-start/harness.py is the same in Python.)

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// How long an invocation may take here (moto on a busy machine is slow).
pub(crate) const INVOKE_TIMEOUT: Duration = Duration::from_secs(90);
/// The deadline the function is told (Lambda's timeout of the function).
const FUNCTION_TIMEOUT: Duration = Duration::from_secs(30);

type Answer = Result<Value, String>;

struct Invocation {
    id: String,
    payload: Value,
    answer: oneshot::Sender<Answer>,
}

struct Shared {
    function: String,
    queue: tokio::sync::Mutex<mpsc::UnboundedReceiver<Invocation>>,
    waiting: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    init_error: Mutex<Option<String>>,
}

/// A function process on its own Runtime API; killed when dropped.
pub(crate) struct Function {
    name: String,
    sender: mpsc::UnboundedSender<Invocation>,
    shared: Arc<Shared>,
    child: Child,
    logs: Arc<Mutex<Vec<String>>>,
    readers: Vec<JoinHandle<()>>,
    server: tokio::task::JoinHandle<()>,
}

impl Function {
    /// Starts the Runtime API, then `binary` with Lambda's environment plus `env`.
    pub(crate) async fn start(name: &str, binary: &Path, env: &[(String, String)]) -> Function {
        let (sender, receiver) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            function: name.to_string(),
            queue: tokio::sync::Mutex::new(receiver),
            waiting: Mutex::new(HashMap::new()),
            init_error: Mutex::new(None),
        });
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                post(response),
            )
            .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the Runtime API");
        let address = listener.local_addr().expect("its address");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });

        let mut command = Command::new(binary);
        command.env_clear();
        for (key, value) in lambda_environment(name, address) {
            command.env(key, value);
        }
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{name} ({}) does not start: {e}", binary.display()));
        let logs = Arc::new(Mutex::new(Vec::new()));
        let readers = vec![
            keep_lines(child.stdout.take().expect("stdout piped"), &logs),
            keep_lines(child.stderr.take().expect("stderr piped"), &logs),
        ];
        Function {
            name: name.to_string(),
            sender,
            shared,
            child,
            logs,
            readers,
            server,
        }
    }

    /// Hands `event` to the function and waits for its answer; panics with
    /// the function's output when it fails, exits or takes too long.
    pub(crate) async fn invoke(&mut self, event: Value) -> Value {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = format!(
            "{:08x}-0000-4000-8000-{:012x}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let (answer, answered) = oneshot::channel();
        self.sender
            .send(Invocation {
                id,
                payload: event,
                answer,
            })
            .expect("the Runtime API runs");
        let result = tokio::select! {
            result = answered => result.unwrap_or_else(|_| Err("no answer".into())),
            () = tokio::time::sleep(INVOKE_TIMEOUT) => Err(format!("no answer within {INVOKE_TIMEOUT:?}")),
            () = self.exited() => Err("the process exited".into()),
        };
        match result {
            Ok(value) => value,
            Err(problem) => panic!(
                "{} invocation failed: {problem}; init error: {:?}; its output:\n{}",
                self.name,
                self.shared.init_error.lock().unwrap(),
                self.logs().join("\n")
            ),
        }
    }

    /// Resolves when the process has exited (polled: std's Child).
    async fn exited(&mut self) {
        loop {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Everything the process wrote so far, stdout and stderr.
    pub(crate) fn logs(&self) -> Vec<String> {
        self.logs.lock().unwrap().clone()
    }

    /// The JSON log lines with this `message`.
    pub(crate) fn log_entries(&self, message: &str) -> Vec<Value> {
        self.logs()
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|entry| entry["message"] == message)
            .collect()
    }

    /// Stops the process; its output is complete afterwards.
    pub(crate) fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        self.server.abort();
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        self.stop();
    }
}

fn keep_lines(
    stream: impl std::io::Read + Send + 'static,
    into: &Arc<Mutex<Vec<String>>>,
) -> JoinHandle<()> {
    let lines = Arc::clone(into);
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            lines.lock().unwrap().push(line);
        }
    })
}

/// What Lambda sets for every function (the AWS credentials are fake: moto
/// and the stand-in management API check no signature).
fn lambda_environment(name: &str, address: SocketAddr) -> Vec<(String, String)> {
    [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("LANG", "en_US.UTF-8"),
        ("TZ", ":UTC"),
        ("_HANDLER", "bootstrap"),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256"),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
        ("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand"),
        ("AWS_ACCESS_KEY_ID", "ASIALIVETESTLIVETEST"),
        (
            "AWS_SECRET_ACCESS_KEY",
            "live/test/live/test/live/test/live/test/0",
        ),
        ("AWS_SESSION_TOKEN", "live-test-session-token"),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value.to_string()))
    .chain([
        ("AWS_LAMBDA_RUNTIME_API".to_string(), address.to_string()),
        ("AWS_LAMBDA_FUNCTION_NAME".to_string(), name.to_string()),
        (
            "AWS_LAMBDA_LOG_GROUP_NAME".to_string(),
            format!("/aws/lambda/{name}"),
        ),
        (
            "AWS_LAMBDA_LOG_STREAM_NAME".to_string(),
            "2026/01/05/[$LATEST]0123456789abcdef0123456789abcdef".to_string(),
        ),
    ])
    .collect()
}

async fn next(State(shared): State<Arc<Shared>>) -> Response {
    // One invocation at a time, like Lambda's one per execution environment.
    let invocation = shared.queue.lock().await.recv().await;
    let Some(invocation) = invocation else {
        return StatusCode::GONE.into_response();
    };
    shared
        .waiting
        .lock()
        .unwrap()
        .insert(invocation.id.clone(), invocation.answer);
    let deadline = SystemTime::now() + FUNCTION_TIMEOUT;
    let deadline_ms = deadline.duration_since(UNIX_EPOCH).unwrap().as_millis();
    let mut headers = HeaderMap::new();
    let mut set = |name: &'static str, value: String| {
        headers.insert(name, value.parse().expect("a header value"));
    };
    set("content-type", "application/json".into());
    set("lambda-runtime-aws-request-id", invocation.id.clone());
    set("lambda-runtime-deadline-ms", deadline_ms.to_string());
    set(
        "lambda-runtime-invoked-function-arn",
        format!(
            "arn:aws:lambda:eu-central-1:123456789012:function:{}",
            shared.function
        ),
    );
    set(
        "lambda-runtime-trace-id",
        "Root=1-677a4e10-3c5d7e9f1a2b4c6d8e0f1a2b;Parent=53995c3f42cd8ad8;Sampled=0".into(),
    );
    (StatusCode::OK, headers, invocation.payload.to_string()).into_response()
}

async fn response(
    State(shared): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> StatusCode {
    let answer = serde_json::from_slice(&body).map_err(|e| {
        format!(
            "the answer is not JSON ({e}): {}",
            String::from_utf8_lossy(&body)
        )
    });
    settle(&shared, &id, answer)
}

async fn error(
    State(shared): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> StatusCode {
    let problem = format!("invocation error: {}", String::from_utf8_lossy(&body));
    settle(&shared, &id, Err(problem))
}

async fn init_error(State(shared): State<Arc<Shared>>, body: Bytes) -> StatusCode {
    *shared.init_error.lock().unwrap() = Some(String::from_utf8_lossy(&body).into_owned());
    StatusCode::ACCEPTED
}

fn settle(shared: &Shared, id: &str, answer: Answer) -> StatusCode {
    match shared.waiting.lock().unwrap().remove(id) {
        Some(waiting) => {
            let _ = waiting.send(answer);
            StatusCode::ACCEPTED
        }
        None => StatusCode::NOT_FOUND,
    }
}
