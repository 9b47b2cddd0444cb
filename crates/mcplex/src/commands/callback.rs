//! The loopback end of a login: one small HTTP listener on 127.0.0.1 that waits for the
//! authorization server's redirect, refuses a callback whose `state` is not ours (and keeps
//! waiting), and hands back the code.

use anyhow::{Result, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The path the redirect URI names.
pub const CALLBACK_PATH: &str = "/callback";

/// The largest request head read.
const MAX_HEAD: usize = 16 * 1024;

/// What one request to the listener said.
enum Callback {
    Code(String),
    /// The authorization server refused (`error=access_denied`, ...).
    Refused(String),
    /// Not ours (wrong path, wrong or missing `state`): answered and ignored.
    Ignored(&'static str),
}

/// Waits for the callback that carries `state`, and returns its code.
pub async fn wait_for_code(listener: &TcpListener, state: &str) -> Result<String> {
    loop {
        let (mut stream, _) = listener.accept().await?;
        let Some(target) = read_target(&mut stream).await else {
            continue;
        };
        match judge(&target, state) {
            Callback::Code(code) => {
                respond(
                    &mut stream,
                    "200 OK",
                    "Logged in. You can close this window.",
                )
                .await;
                return Ok(code);
            }
            Callback::Refused(error) => {
                respond(&mut stream, "400 Bad Request", "The login was refused.").await;
                bail!("the authorization server refused the login: {error}");
            }
            Callback::Ignored(why) => {
                if why.contains("state") {
                    tracing::warn!("refused a login callback: {why}");
                }
                respond(&mut stream, "400 Bad Request", why).await;
            }
        }
    }
}

/// The request target of the first line (`GET /callback?… HTTP/1.1`).
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
        let read = stream.read(&mut buffer).await.ok()?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(buffer.get(..read)?);
    }
    let head = String::from_utf8_lossy(&head);
    let line = head.lines().next()?;
    let mut parts = line.split_whitespace();
    let (_method, target) = (parts.next()?, parts.next()?);
    Some(target.to_owned())
}

fn judge(target: &str, state: &str) -> Callback {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != CALLBACK_PATH {
        return Callback::Ignored("not the login callback");
    }
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let get = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    // Compared before anything else is believed: a forged callback says nothing.
    if get("state").as_deref() != Some(state) {
        return Callback::Ignored("the callback's state is not this login's");
    }
    if let Some(error) = get("error") {
        let detail = get("error_description").unwrap_or_default();
        return Callback::Refused(format!("{error} {detail}").trim().to_owned());
    }
    match get("code") {
        Some(code) if !code.is_empty() => Callback::Code(code),
        _ => Callback::Ignored("the callback carries no code"),
    }
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!("<!doctype html><title>mcplex</title><p>{text}</p>\n");
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_callback_with_our_state_gives_a_code() {
        assert!(
            matches!(judge("/callback?code=c1&state=s1", "s1"), Callback::Code(c) if c == "c1")
        );
        assert!(matches!(
            judge("/callback?code=c1&state=s2", "s1"),
            Callback::Ignored(_)
        ));
        assert!(matches!(
            judge("/callback?code=c1", "s1"),
            Callback::Ignored(_)
        ));
        assert!(matches!(
            judge("/other?code=c1&state=s1", "s1"),
            Callback::Ignored(_)
        ));
        assert!(
            matches!(judge("/callback?error=access_denied&state=s1", "s1"), Callback::Refused(e) if e == "access_denied")
        );
        // A refusal with another state is a forgery, not a refusal.
        assert!(matches!(
            judge("/callback?error=access_denied&state=x", "s1"),
            Callback::Ignored(_)
        ));
    }
}
