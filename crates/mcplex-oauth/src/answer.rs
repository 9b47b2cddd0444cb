//! An authorization server's answer body, read with a cap: metadata, registrations, tokens and
//! key sets are a few kilobytes, and a server that sends more (by mistake or on purpose) gets an
//! error instead of the gateway's memory.

use crate::AnswerError;

/// The most an answer may hold.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// The body of `response`, or why not: a transport failure (without the URL, which the caller
/// names) or an answer over [`MAX_ANSWER_BYTES`].
pub async fn read_capped(mut response: reqwest::Response) -> Result<Vec<u8>, AnswerError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| AnswerError::Transport(e.without_url().to_string()))?
    {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(AnswerError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
