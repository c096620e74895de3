//! Slow and silent clients cannot hold the local server (docs/security.md,
//! "Slow clients"): connections that send nothing, a head sent a byte a
//! second, a body announced far over the limit, a body that stalls, and the
//! bound on connections.
//!
//! The servers run with the timeouts shortened (`HEADER_TIMEOUT_SECONDS`,
//! `BODY_TIMEOUT_SECONDS`, `MAX_CONNECTIONS`), so the file takes seconds;
//! the mechanism is the same at the defaults. These limits are the local
//! server's own (in AWS, API Gateway reads the requests), so the Lambda pass
//! skips this file (tests/lambda-watch-skips.txt) and the DynamoDB pass
//! skips it too: the store plays no part in them.

use std::time::{Duration, Instant};

use blackbox_tests::*;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The shortened timeouts of these servers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(2);
const BODY_TIMEOUT: Duration = Duration::from_secs(3);
/// Slack for a busy machine on top of a timeout: the test fails only when
/// the server keeps a connection this much longer than it should.
const MARGIN: Duration = Duration::from_secs(3);

const SILENT_CONNECTIONS: usize = 500;

fn skip_on_dynamodb(test: &str) -> bool {
    if on_dynamodb() {
        eprintln!(
            "{test}: skipped on DynamoDB, the limits are the HTTP layer's and the same on both stores"
        );
    }
    on_dynamodb()
}

/// A server with the short timeouts and `max_connections`.
fn server(max_connections: usize) -> Server {
    Server::start(
        Options::sandbox()
            .env(
                "HEADER_TIMEOUT_SECONDS",
                &HEADER_TIMEOUT.as_secs().to_string(),
            )
            .env("BODY_TIMEOUT_SECONDS", &BODY_TIMEOUT.as_secs().to_string())
            .env("MAX_CONNECTIONS", &max_connections.to_string()),
    )
}

/// This process holds 500 sockets and more; where the soft limit of open
/// files is lower (often 1024, and the server under test counts too), raise
/// it to the hard limit.
fn enough_open_files() {
    let limit = rlimit::increase_nofile_limit(u64::MAX).expect("open-files limit");
    assert!(
        limit > 2 * SILENT_CONNECTIONS as u64,
        "the open-files limit is {limit}: raise `ulimit -n` above {}",
        2 * SILENT_CONNECTIONS
    );
}

fn addr(server: &Server) -> String {
    server.base_url().trim_start_matches("http://").to_string()
}

/// Waits until the server closes `stream` (end of file or a reset), reading
/// and dropping whatever it sends; gives the time from `since`, or `None`
/// when it is still open after `limit`.
async fn closed_after(mut stream: TcpStream, since: Instant, limit: Duration) -> Option<Duration> {
    let mut buffer = [0_u8; 1024];
    let read_until_closed = async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return since.elapsed(),
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(limit, read_until_closed).await.ok()
}

fn percentile(sorted: &[Duration], share: f64) -> Duration {
    let rank = ((sorted.len() as f64 * share).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[tokio::test]
async fn five_hundred_silent_connections_are_closed_at_the_header_timeout_while_requests_answer() {
    if skip_on_dynamodb("five_hundred_silent_connections") {
        return;
    }
    enough_open_files();
    let server = server(1024);
    let consumer = server.new_consumer().await;
    let address = addr(&server);

    let started = Instant::now();
    let mut silent = Vec::with_capacity(SILENT_CONNECTIONS);
    for _ in 0..SILENT_CONNECTIONS {
        let connected = Instant::now();
        let stream = TcpStream::connect(&address).await.expect("connect");
        silent.push(tokio::spawn(closed_after(
            stream,
            connected,
            HEADER_TIMEOUT + MARGIN,
        )));
    }
    let opened_in = started.elapsed();

    // What a central system does meanwhile: open and close a call, again
    // and again, until every silent connection is gone.
    let mut latencies = Vec::new();
    let mut open = true;
    while !silent.iter().all(tokio::task::JoinHandle::is_finished) {
        let data = if open {
            r#"{"event":"Normalruf"}"#
        } else {
            r#"{"closed":true}"#
        };
        let sent = Instant::now();
        let response = server.display(&consumer, "Zimmer-1", data).await;
        latencies.push(sent.elapsed());
        response.expect_status(if open { 201 } else { 200 });
        open = !open;
    }

    let mut closed = Vec::with_capacity(SILENT_CONNECTIONS);
    for task in silent {
        let after = task.await.expect("reader task");
        closed.push(after.unwrap_or_else(|| {
            panic!(
                "a silent connection was still open {:?} after it connected (header timeout {HEADER_TIMEOUT:?})",
                HEADER_TIMEOUT + MARGIN
            )
        }));
    }
    closed.sort();
    latencies.sort();
    let p99 = percentile(&latencies, 0.99);
    eprintln!(
        "{SILENT_CONNECTIONS} silent connections opened in {opened_in:?}, closed after \
         {:?} to {:?} (header timeout {HEADER_TIMEOUT:?}); {} requests meanwhile: \
         p50 {:?}, p99 {p99:?}, max {:?}",
        closed[0],
        closed[closed.len() - 1],
        latencies.len(),
        percentile(&latencies, 0.5),
        latencies[latencies.len() - 1],
    );
    // Closed by the timeout, not by anything earlier.
    assert!(
        closed[0] >= HEADER_TIMEOUT - Duration::from_millis(100),
        "a silent connection was closed after {:?}, before the header timeout",
        closed[0]
    );
    assert!(
        latencies.len() >= 10,
        "only {} requests answered while the connections were held",
        latencies.len()
    );
    // Generous: a loopback request takes milliseconds; this catches requests
    // that waited for a silent connection to go.
    assert!(
        p99 < Duration::from_secs(1),
        "p99 {p99:?} of the requests during the attack"
    );
}

#[tokio::test]
async fn a_head_sent_a_byte_a_second_is_closed_at_the_header_timeout() {
    if skip_on_dynamodb("a_head_sent_a_byte_a_second") {
        return;
    }
    let server = server(1024);
    let stream = TcpStream::connect(addr(&server)).await.expect("connect");
    let connected = Instant::now();
    let (mut reader, mut writer) = stream.into_split();
    let head =
        b"POST /api/v1/display HTTP/1.1\r\nHost: nurse-call\r\nContent-Type: application/json\r\n";
    let trickle = tokio::spawn(async move {
        let mut sent = 0;
        for byte in head {
            if writer.write_all(&[*byte]).await.is_err() {
                break;
            }
            sent += 1;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        sent
    });
    let mut answer = Vec::new();
    let read = tokio::time::timeout(HEADER_TIMEOUT + MARGIN, reader.read_to_end(&mut answer)).await;
    let closed = connected.elapsed();
    trickle.abort();
    assert!(
        read.is_ok(),
        "the connection was still open {closed:?} into a head sent a byte a second"
    );
    eprintln!("a head sent a byte a second: closed after {closed:?}");
    assert!(
        closed >= HEADER_TIMEOUT - Duration::from_millis(100),
        "closed after {closed:?}, before the header timeout"
    );
    // The server closes without an answer: the request never began.
    assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
}

#[tokio::test]
async fn a_body_announced_over_the_limit_is_413_within_the_body_timeout_and_the_connection_closed()
{
    if skip_on_dynamodb("a_body_announced_over_the_limit") {
        return;
    }
    let server = server(1024);
    // 1 GB announced, two bytes sent; the rest never comes. The server reads
    // up to the limit before it answers (a client still sending would
    // otherwise get a reset instead of the 413), so the 413 comes when the
    // body timeout ends that read.
    let request = format!(
        "POST {DISPLAY} HTTP/1.1\r\nHost: nurse-call\r\nContent-Type: application/json\r\n\
         Content-Length: 1000000000\r\n\r\n{{}}"
    );
    let sent = Instant::now();
    // `raw` reads until the server closes the connection.
    let response = server.raw(request.as_bytes(), false);
    let took = sent.elapsed();
    eprintln!(
        "1 GB announced: {} and closed after {took:?}",
        response.status
    );
    response.expect_status(413);
    assert_eq!(
        response.text,
        error_body(
            "payload_too_large",
            413,
            "Der Anfragekörper ist größer als 256 KiB."
        )
    );
    assert!(
        took < BODY_TIMEOUT + MARGIN,
        "answered and closed after {took:?}, body timeout {BODY_TIMEOUT:?}"
    );
    // The server answers the next request.
    server.get(CALL_TYPES).await.expect_status(200);
}

#[tokio::test]
async fn a_body_that_stalls_is_400_at_the_body_timeout_and_the_connection_closed() {
    if skip_on_dynamodb("a_body_that_stalls") {
        return;
    }
    let server = server(1024);
    // 100 bytes announced, six sent.
    let request = format!(
        "POST {DISPLAY} HTTP/1.1\r\nHost: nurse-call\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"a\":"
    );
    let sent = Instant::now();
    let response = server.raw(request.as_bytes(), false);
    let took = sent.elapsed();
    eprintln!(
        "a stalled body: {} and closed after {took:?}",
        response.status
    );
    response.expect_status(400);
    assert_eq!(
        response.text,
        error_body(
            "malformed_request",
            400,
            "Der Anfragekörper konnte nicht vollständig gelesen werden."
        )
    );
    assert!(
        took >= BODY_TIMEOUT - Duration::from_millis(100) && took < BODY_TIMEOUT + MARGIN,
        "answered and closed after {took:?}, body timeout {BODY_TIMEOUT:?}"
    );
}

/// One `GET` on a kept-alive connection: the status and the time it took.
async fn get_kept_alive(stream: &mut BufReader<TcpStream>, path: &str) -> (u16, Duration) {
    let sent = Instant::now();
    let request = format!("GET {path} HTTP/1.1\r\nHost: nurse-call\r\n\r\n");
    stream
        .get_mut()
        .write_all(request.as_bytes())
        .await
        .expect("request written on the kept-alive connection");
    let mut status_line = String::new();
    stream
        .read_line(&mut status_line)
        .await
        .expect("status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {status_line:?}"));
    let mut length = 0;
    loop {
        let mut line = String::new();
        stream.read_line(&mut line).await.expect("header line");
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().expect("Content-Length");
        }
    }
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await.expect("body");
    (status, sent.elapsed())
}

#[tokio::test]
async fn at_the_connection_bound_new_connections_wait_and_open_ones_keep_answering() {
    if skip_on_dynamodb("at_the_connection_bound") {
        return;
    }
    const BOUND: usize = 20;
    let server = server(BOUND);
    let address = addr(&server);

    // A central system's kept-alive connection, open before the bound is reached.
    let mut kept = BufReader::new(TcpStream::connect(&address).await.expect("connect"));
    assert_eq!(get_kept_alive(&mut kept, CALL_TYPES).await.0, 200);

    // The other slots taken by connections that send nothing.
    let mut silent = Vec::new();
    for _ in 1..BOUND {
        silent.push(TcpStream::connect(&address).await.expect("connect"));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    // A new client: connected by the kernel, served once a slot is free,
    // which is when the silent connections reach the header timeout.
    let newcomer = {
        let url = format!("{}{CALL_TYPES}", server.base_url());
        tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("client");
            let sent = Instant::now();
            let status = client.get(url).send().await.expect("answered").status();
            (status.as_u16(), sent.elapsed())
        })
    };

    // Meanwhile the kept-alive connection answers at once, request after
    // request (each within the header timeout of the last, so it stays).
    let mut kept_latencies = Vec::new();
    while !newcomer.is_finished() {
        let (status, took) = get_kept_alive(&mut kept, CALL_TYPES).await;
        assert_eq!(status, 200);
        kept_latencies.push(took);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (status, waited) = newcomer.await.expect("newcomer task");
    kept_latencies.sort();
    let slowest = kept_latencies[kept_latencies.len() - 1];
    eprintln!(
        "bound {BOUND}: the new connection was answered {status} after {waited:?}; \
         {} requests on the kept-alive one meanwhile, slowest {slowest:?}",
        kept_latencies.len()
    );
    assert_eq!(status, 200);
    assert!(
        waited >= HEADER_TIMEOUT / 2 && waited < HEADER_TIMEOUT + MARGIN,
        "the new connection was answered after {waited:?}: it should wait for a \
         silent one to reach the header timeout ({HEADER_TIMEOUT:?})"
    );
    assert!(
        slowest < Duration::from_secs(1),
        "the kept-alive connection answered in {slowest:?} at the bound"
    );
    // The operator learns why clients waited.
    assert!(
        server
            .logs_once(|lines| lines.iter().any(|l| l.contains("connection limit reached")))
            .iter()
            .any(|line| line.contains("\"level\":\"WARN\"")
                && line.contains("connection limit reached")
                && line.contains(&format!("\"max_connections\":{BOUND}"))),
        "no warning about the bound in the logs"
    );
    drop(silent);
}

#[tokio::test]
async fn live_sockets_outlive_the_header_timeout_and_do_not_count_against_the_bound() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    if skip_on_dynamodb("live_sockets_outlive_the_header_timeout") {
        return;
    }
    const BOUND: usize = 2;
    let server = server(BOUND);
    let visitor = server.new_consumer().await;
    let url = format!(
        "{}/api/v1/display/live?consumer={}&hash={}",
        server.base_url().replacen("http://", "ws://", 1),
        visitor.id,
        visitor.proof()
    );
    // More displays than the bound: each gives its slot back once upgraded.
    let mut sockets = Vec::new();
    for _ in 0..=BOUND {
        let (socket, _) = tokio::time::timeout(MARGIN, tokio_tungstenite::connect_async(&url))
            .await
            .expect("the live socket connects although the bound is smaller")
            .expect("live socket");
        sockets.push(socket);
    }
    let sent = Instant::now();
    server.get(CALL_TYPES).await.expect_status(200);
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "a request waited {:?} behind the live sockets",
        sent.elapsed()
    );

    // Silent for twice the header timeout (a display pings every few
    // minutes, DECISIONS §11), then still open: a ping is answered and an
    // open reaches every socket.
    tokio::time::sleep(2 * HEADER_TIMEOUT + Duration::from_secs(1)).await;
    server
        .display(&visitor, "Zimmer-7", r#"{"event":"Normalruf"}"#)
        .await
        .expect_status(201);
    for socket in &mut sockets {
        socket
            .send(Message::text(r#"{"action":"ping"}"#))
            .await
            .expect("the live socket is still open");
        let mut seen = Vec::new();
        while !(seen.contains(&"pong".to_string()) && seen.contains(&"call.opened".to_string())) {
            let frame = tokio::time::timeout(MARGIN, socket.next())
                .await
                .unwrap_or_else(|_| panic!("no pong and call.opened in time; seen {seen:?}"))
                .expect("socket open")
                .expect("a frame");
            if let Message::Text(text) = frame {
                let message: Value = serde_json::from_str(text.as_str()).expect("JSON message");
                seen.push(message["type"].as_str().unwrap_or_default().to_string());
            }
        }
    }
}
