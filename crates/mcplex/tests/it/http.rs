//! The raw HTTP client of the tests, for what a library would hide: every header of the answer,
//! the exact request line, no retries, no pooling. One request on its own connection
//! (`Connection: close`), read to the end. `http_get`/`http_send` are the short forms most
//! tests use (status and body, a 5 s wait).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

/// The version the request line names. HTTP/1.0 answers are never chunked.
#[derive(Debug, Clone, Copy)]
pub enum Version {
    Http10,
    Http11,
}

/// An answer as the wire carried it.
#[derive(Debug, Default)]
pub struct Reply {
    /// 0 when there was no connection or no answer.
    pub status: u16,
    /// The status line and the header lines.
    pub head: String,
    pub body: String,
}

impl Reply {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    /// The JSON-RPC message: the last JSON `data:` line of an event stream, or the body itself.
    pub fn message(&self) -> Option<Value> {
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|data| data.starts_with('{'))
            .or(Some(self.body.trim()))
            .and_then(|text| serde_json::from_str(text).ok())
    }

    /// [`Reply::message`], or `{"unparsed": body}` so that an assertion shows what came.
    pub fn json(&self) -> Value {
        self.message()
            .unwrap_or_else(|| json!({"unparsed": self.body}))
    }
}

/// Sends one request to `authority` and reads the answer (waiting at most 60 s for it).
pub fn exchange(
    authority: &str,
    version: Version,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let limit = Duration::from_secs(60);
    exchange_within(authority, version, method, path, headers, body, limit)
}

/// [`exchange`], waiting at most `read_timeout` for the answer. A `Host` among `headers`
/// replaces the default one (the authority).
pub fn exchange_within(
    authority: &str,
    version: Version,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    read_timeout: Duration,
) -> Reply {
    let is_host = |name: &str| name.eq_ignore_ascii_case("host");
    let host = headers
        .iter()
        .find(|(name, _)| is_host(name))
        .map_or(authority, |(_, value)| value);
    let version = match version {
        Version::Http10 => "HTTP/1.0",
        Version::Http11 => "HTTP/1.1",
    };
    let mut request = format!(
        "{method} {path} {version}\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers.iter().filter(|(name, _)| !is_host(name)) {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let Ok(mut stream) = TcpStream::connect(authority) else {
        return Reply::default();
    };
    let _ = stream.set_read_timeout(Some(read_timeout));
    if stream.write_all(request.as_bytes()).is_err() {
        return Reply::default();
    }
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw);
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    Reply {
        status: head
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or(0),
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

/// How long the simple helpers below wait for an answer.
const HTTP_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// A minimal HTTP/1.1 GET (no client library needed for health probes): (status, body).
pub fn http_get(authority: &str, path: &str) -> (u16, String) {
    let reply = exchange_within(
        authority,
        Version::Http11,
        "GET",
        path,
        &[],
        "",
        HTTP_READ_TIMEOUT,
    );
    (reply.status, reply.body)
}

/// A minimal HTTP POST of a JSON body with extra headers.
pub fn http_post(
    authority: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    http_send(authority, "POST", path, headers, body)
}

/// A minimal HTTP/1.0 request with a JSON body and extra headers (a `Host` among them replaces
/// the default one): (status, body).
pub fn http_send(
    authority: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let reply = exchange_within(
        authority,
        Version::Http10,
        method,
        path,
        headers,
        body,
        HTTP_READ_TIMEOUT,
    );
    (reply.status, reply.body)
}
