//! The requests of an OAuth client: dynamic client registration (RFC 7591), the authorization
//! URL (code flow with PKCE, `state` and `resource`), and the token endpoint's three grants
//! (authorization code, refresh token, client credentials). Every secret travels as a
//! [`Secret`]; error texts carry the server's `error` code and description, never a token.

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::Deserialize;
use url::Url;

use crate::{OAuthError, Secret};

/// How a client identifies itself to the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub id: String,
    /// Sent with HTTP Basic; a public client (PKCE only) has none.
    pub secret: Option<Secret>,
}

/// What a token endpoint granted. `expires_at` is Unix seconds.
#[derive(Debug, Clone)]
pub struct Granted {
    pub access_token: Secret,
    pub refresh_token: Option<Secret>,
    pub expires_at: Option<i64>,
    pub scope: Option<String>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Secret,
    token_type: Option<String>,
    expires_in: Option<f64>,
    refresh_token: Option<Secret>,
    scope: Option<String>,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: String,
    error_description: Option<String>,
}

#[derive(Deserialize)]
struct Registered {
    client_id: String,
    client_secret: Option<Secret>,
}

/// Registers mcplex as a client with `redirect_uri` (RFC 7591): a public client for the code
/// flow, or a confidential one for client credentials.
pub async fn register(
    http: &reqwest::Client,
    endpoint: &str,
    redirect_uri: Option<&str>,
    scope: Option<&str>,
) -> Result<Client, OAuthError> {
    let mut body = serde_json::json!({"client_name": "mcplex"});
    match redirect_uri {
        Some(uri) => {
            body["redirect_uris"] = serde_json::json!([uri]);
            body["grant_types"] = serde_json::json!(["authorization_code", "refresh_token"]);
            body["response_types"] = serde_json::json!(["code"]);
            body["token_endpoint_auth_method"] = "none".into();
        }
        None => {
            body["grant_types"] = serde_json::json!(["client_credentials"]);
            body["token_endpoint_auth_method"] = "client_secret_basic".into();
        }
    }
    if let Some(scope) = scope {
        body["scope"] = scope.into();
    }
    let response = http
        .post(endpoint)
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| OAuthError::Unreachable(format!("registration: {}", e.without_url())))?;
    let status = response.status();
    let bytes = crate::read_capped(response)
        .await
        .map_err(|why| OAuthError::Unreachable(format!("registration: {why}")))?;
    if !status.is_success() {
        return Err(OAuthError::Registration(format!(
            "HTTP {status}{}",
            error_text(&bytes)
        )));
    }
    let registered: Registered = serde_json::from_slice(&bytes)
        // The answer holds the client secret: only the error's category, never its text.
        .map_err(|e| {
            OAuthError::Registration(format!("the answer is malformed ({})", e.classify_text()))
        })?;
    Ok(Client {
        id: registered.client_id,
        secret: registered.client_secret,
    })
}

/// What the authorization URL asks for.
pub struct AuthorizationRequest<'a> {
    pub endpoint: &'a str,
    pub client_id: &'a str,
    pub redirect_uri: &'a str,
    pub challenge: &'a str,
    pub state: &'a str,
    pub scope: Option<&'a str>,
    pub resource: &'a str,
}

/// The URL a person opens to log in.
pub fn authorization_url(request: &AuthorizationRequest<'_>) -> Result<Url, OAuthError> {
    let mut url = Url::parse(request.endpoint)
        .map_err(|e| OAuthError::Metadata(format!("authorization_endpoint is not a URL: {e}")))?;
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", request.client_id)
            .append_pair("redirect_uri", request.redirect_uri)
            .append_pair("code_challenge", request.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", request.state)
            .append_pair("resource", request.resource);
        if let Some(scope) = request.scope {
            query.append_pair("scope", scope);
        }
    }
    Ok(url)
}

/// A grant sent to the token endpoint.
pub enum Grant<'a> {
    Code {
        code: &'a str,
        verifier: &'a Secret,
        redirect_uri: &'a str,
    },
    Refresh {
        token: &'a Secret,
    },
    ClientCredentials {
        scope: Option<&'a str>,
    },
    /// RFC 8693: a caller's access token exchanged for one for the resource.
    TokenExchange {
        subject_token: &'a Secret,
    },
}

/// RFC 8693's names for the grant and for an access token as a token type.
const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// Sends `grant` to the token endpoint for `resource`.
pub async fn request_token(
    http: &reqwest::Client,
    endpoint: &str,
    client: &Client,
    grant: Grant<'_>,
    resource: &str,
) -> Result<Granted, OAuthError> {
    let form = token_form(&grant, resource, client);
    let mut request = http
        .post(endpoint)
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(ACCEPT, "application/json");
    if let Some(secret) = &client.secret {
        request = request.basic_auth(&client.id, Some(secret.expose()));
    }
    let response = request
        .body(form)
        .send()
        .await
        .map_err(|e| OAuthError::Unreachable(format!("token endpoint: {}", e.without_url())))?;
    let status = response.status();
    let bytes = crate::read_capped(response)
        .await
        .map_err(|why| OAuthError::Unreachable(format!("token endpoint: {why}")))?;
    if !status.is_success() {
        return Err(token_error(status, &bytes));
    }
    granted(&bytes)
}

/// The form body of `grant`; a public client names itself in it, a confidential one
/// authenticates with HTTP Basic instead.
fn token_form(grant: &Grant<'_>, resource: &str, client: &Client) -> String {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    match grant {
        Grant::Code {
            code,
            verifier,
            redirect_uri,
        } => {
            form.append_pair("grant_type", "authorization_code")
                .append_pair("code", code)
                .append_pair("code_verifier", verifier.expose())
                .append_pair("redirect_uri", redirect_uri);
        }
        Grant::Refresh { token } => {
            form.append_pair("grant_type", "refresh_token")
                .append_pair("refresh_token", token.expose());
        }
        Grant::ClientCredentials { scope } => {
            form.append_pair("grant_type", "client_credentials");
            if let Some(scope) = scope {
                form.append_pair("scope", scope);
            }
        }
        Grant::TokenExchange { subject_token } => {
            form.append_pair("grant_type", TOKEN_EXCHANGE_GRANT)
                .append_pair("subject_token", subject_token.expose())
                .append_pair("subject_token_type", ACCESS_TOKEN_TYPE)
                .append_pair("requested_token_type", ACCESS_TOKEN_TYPE);
        }
    }
    form.append_pair("resource", resource);
    if client.secret.is_none() {
        form.append_pair("client_id", &client.id);
    }
    form.finish()
}

fn granted(bytes: &[u8]) -> Result<Granted, OAuthError> {
    let answer: TokenAnswer = serde_json::from_slice(bytes).map_err(|e| OAuthError::Token {
        code: "malformed_answer".into(),
        detail: format!("the token answer does not parse: {}", e.classify_text()),
    })?;
    if let Some(kind) = &answer.token_type
        && !kind.eq_ignore_ascii_case("bearer")
    {
        return Err(OAuthError::Token {
            code: "unsupported_token_type".into(),
            detail: format!("token_type {kind:?} is not Bearer"),
        });
    }
    let now = crate::now_unix();
    Ok(Granted {
        access_token: answer.access_token,
        refresh_token: answer.refresh_token,
        expires_at: answer
            .expires_in
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| now.saturating_add(s.min(1e12) as i64)),
        scope: answer.scope,
    })
}

fn token_error(status: reqwest::StatusCode, bytes: &[u8]) -> OAuthError {
    match serde_json::from_slice::<ErrorAnswer>(bytes) {
        Ok(answer) => OAuthError::Token {
            code: answer.error,
            detail: answer.error_description.unwrap_or_default(),
        },
        Err(_) => OAuthError::Token {
            code: format!("http_{}", status.as_u16()),
            detail: String::new(),
        },
    }
}

/// `: error (description)` of an OAuth error body, or nothing.
#[cfg(test)]
pub(crate) fn error_text_for_tests(bytes: &[u8]) -> String {
    error_text(bytes)
}

fn error_text(bytes: &[u8]) -> String {
    serde_json::from_slice::<ErrorAnswer>(bytes)
        .map(|e| match e.error_description {
            Some(description) => format!(": {} ({})", bounded(&e.error), bounded(&description)),
            None => format!(": {}", bounded(&e.error)),
        })
        .unwrap_or_default()
}

/// A server's error text as a log line may carry it: printable, at most 200 characters.
fn bounded(text: &str) -> String {
    const MOST: usize = 200;
    let mut out: String = text
        .chars()
        .filter(|c| !c.is_control())
        .take(MOST)
        .collect();
    if text.chars().count() > MOST {
        out.push('…');
    }
    out
}

/// Serde's error category only: its message may quote the body, which holds a token.
trait ClassifyText {
    fn classify_text(&self) -> &'static str;
}

impl ClassifyText for serde_json::Error {
    fn classify_text(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "I/O error",
            serde_json::error::Category::Syntax => "not JSON",
            serde_json::error::Category::Data => "missing or mistyped fields",
            serde_json::error::Category::Eof => "truncated",
        }
    }
}
