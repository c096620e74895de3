//! A stand-in HTTP/1.1 server on loopback that counts the connections made
//! to it and records every request: the tests of the init's warm-up
//! (issue 30) check with it that the first request after init reuses the
//! connection the warm-up opened. An AWS client pointed at its
//! `http://` endpoint sends it DynamoDB's JSON protocol (the operation in
//! `X-Amz-Target`) or a REST call (method and path), answered by `answer`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// What the server answers a request: status and JSON body. The request is
/// named by its `X-Amz-Target` (e.g. `DynamoDB_20120810.Scan`), else by
/// method and path (`POST /live/@connections/abc`).
pub type Answer = Arc<dyn Fn(&str) -> (u16, String) + Send + Sync>;

#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    requests: Mutex<Vec<String>>,
}

/// A running stand-in server (see the module): it counts and records until
/// dropped, which stops it.
pub struct CountingServer {
    address: std::net::SocketAddr,
    seen: Arc<Seen>,
    server: tokio::task::JoinHandle<()>,
}

impl CountingServer {
    /// Answers every request with `answer`; with `hang_first`, the first
    /// connection's requests are read but never answered (a stalled
    /// service).
    pub async fn start(answer: Answer, hang_first: bool) -> CountingServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let address = listener.local_addr().expect("its address");
        let seen = Arc::new(Seen::default());
        let shared = Arc::clone(&seen);
        let server = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let number = shared.connections.fetch_add(1, Ordering::SeqCst);
                let hang = hang_first && number == 0;
                tokio::spawn(serve(stream, Arc::clone(&shared), answer.clone(), hang));
            }
        });
        CountingServer {
            address,
            seen,
            server,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.seen.connections.load(Ordering::SeqCst)
    }

    /// The requests received so far, named as for [`Answer`].
    pub fn requests(&self) -> Vec<String> {
        self.seen.requests.lock().unwrap().clone()
    }
}

impl Drop for CountingServer {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// One connection: requests one after the other (keep-alive) until the
/// client closes it.
async fn serve(stream: TcpStream, seen: Arc<Seen>, answer: Answer, hang: bool) {
    let mut stream = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        match stream.read_line(&mut request_line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut target = None;
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                match name.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    "x-amz-target" => target = Some(value.trim().to_string()),
                    _ => {}
                }
            }
        }
        let mut body = vec![0; length];
        if stream.read_exact(&mut body).await.is_err() {
            return;
        }
        let name = target.unwrap_or_else(|| {
            let mut parts = request_line.split_whitespace();
            format!(
                "{} {}",
                parts.next().unwrap_or(""),
                parts.next().unwrap_or("")
            )
        });
        seen.requests.lock().unwrap().push(name.clone());
        if hang {
            // Hold the connection open, unanswered, until the test ends.
            std::future::pending::<()>().await;
        }
        let (status, json) = answer(&name);
        let response = format!(
            "HTTP/1.1 {status} Stand-in\r\ncontent-type: application/x-amz-json-1.0\r\n\
             content-length: {}\r\n\r\n{json}",
            json.len()
        );
        if stream
            .get_mut()
            .write_all(response.as_bytes())
            .await
            .is_err()
        {
            return;
        }
    }
}
