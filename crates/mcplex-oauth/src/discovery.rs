//! Finding a server's authorization server: the `WWW-Authenticate` challenge of a 401, the
//! protected resource metadata (RFC 9728) and the authorization server metadata (RFC 8414, with
//! the OpenID configuration as the fallback), each well-known URL built by path insertion.

use reqwest::header::ACCEPT;
use serde::Deserialize;
use url::Url;

use crate::OAuthError;

/// What discovery found for one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// The `resource` to ask tokens for (RFC 8707): the metadata's, else the server's URL.
    pub resource: String,
    pub issuer: String,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    /// Scopes the resource says it supports, asked for when the config names none.
    pub scopes_supported: Vec<String>,
}

#[derive(Deserialize)]
pub(crate) struct ResourceMetadata {
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
}

#[derive(Deserialize)]
pub(crate) struct ServerMetadata {
    issuer: Option<String>,
    authorization_endpoint: Option<String>,
    token_endpoint: Option<String>,
    registration_endpoint: Option<String>,
    #[serde(default)]
    code_challenge_methods_supported: Option<Vec<String>>,
}

/// The `resource_metadata` URL of a `WWW-Authenticate: Bearer …` challenge, if it names one.
pub fn resource_metadata_of(challenge: &str) -> Option<String> {
    let rest = challenge.trim_start();
    let (scheme, params) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    auth_params(params)
        .into_iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("resource_metadata"))
        .map(|(_, value)| value)
}

/// `name=value` and `name="quoted, value"` pairs of a challenge, in order.
fn auth_params(text: &str) -> Vec<(String, String)> {
    let mut params = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        let name: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=' && *c != ','))
            .collect::<String>()
            .trim()
            .to_owned();
        if name.is_empty() || chars.next() != Some('=') {
            return params;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            value = std::iter::from_fn(|| chars.next_if(|c| *c != ',')).collect();
            value = value.trim().to_owned();
        }
        params.push((name, value));
    }
}

/// The well-known URLs of `server_url`'s protected resource metadata, most specific first:
/// with the URL's path inserted after `/.well-known/oauth-protected-resource`, then at the root.
pub fn resource_metadata_urls(server_url: &Url) -> Vec<Url> {
    well_known(server_url, &["oauth-protected-resource"], false)
}

/// An issuer named with or without a trailing slash is the same issuer: the one comparison of
/// issuers (metadata against the issuer asked for, a token's `iss` against the configured one).
pub fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// The well-known URLs of an issuer's metadata, in the order RFC 8414 and OpenID Connect
/// Discovery say to try them: OAuth with path insertion, OpenID with path insertion, OpenID with
/// the path appended (for an issuer with no path: the two root documents).
pub fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let mut urls = well_known(
        issuer,
        &["oauth-authorization-server", "openid-configuration"],
        true,
    );
    let path = issuer.path().trim_end_matches('/');
    if !path.is_empty() {
        let mut appended = bare(issuer);
        appended.set_path(&format!("{path}/.well-known/openid-configuration"));
        urls.push(appended);
    }
    urls
}

/// The resource a server's URL names: the URL as configured, or without its user info, query
/// and fragment when it has any.
pub(crate) fn resource_named_by(server_url: &str) -> String {
    match Url::parse(server_url) {
        Ok(url)
            if url.query().is_some()
                || url.fragment().is_some()
                || !url.username().is_empty()
                || url.password().is_some() =>
        {
            bare(&url).to_string()
        }
        _ => server_url.to_owned(),
    }
}

/// `url` without its user info, query and fragment: a metadata document's address, or a
/// resource's name, says nothing of a credential the configured URL carries (and is shown in
/// errors and sent to authorization servers).
fn bare(url: &Url) -> Url {
    let mut bare = url.clone();
    // Only a URL that cannot have user info refuses these, and it has none.
    let _ = bare.set_username("");
    let _ = bare.set_password(None);
    bare.set_query(None);
    bare.set_fragment(None);
    bare
}

fn well_known(base: &Url, documents: &[&str], only_inserted: bool) -> Vec<Url> {
    let path = base.path().trim_end_matches('/');
    let mut urls = Vec::new();
    for document in documents {
        let mut url = bare(base);
        url.set_path(&format!("/.well-known/{document}{path}"));
        urls.push(url);
        if !path.is_empty() && !only_inserted {
            let mut root = bare(base);
            root.set_path(&format!("/.well-known/{document}"));
            urls.push(root);
        }
    }
    urls
}

/// Discovers the authorization server of the server at `server_url`: from the metadata its
/// 401's `challenge` (`WWW-Authenticate`) names, when the caller has one, else at the RFC 9728
/// well-known URLs.
pub async fn discover(
    http: &reqwest::Client,
    server_url: &str,
    challenge: Option<&str>,
) -> Result<Discovered, OAuthError> {
    let url = Url::parse(server_url)
        .map_err(|e| OAuthError::Discovery(format!("the server URL is not a URL: {e}")))?;
    let mut candidates = resource_metadata_urls(&url);
    if let Some(named) = challenge_metadata_url(&url, challenge) {
        candidates.insert(0, named);
    }
    let resource: ResourceMetadata = first_document(http, &candidates, "protected resource")
        .await?
        .ok_or_else(|| {
            OAuthError::Discovery(format!(
                "{} serves no protected resource metadata (no resource_metadata in a 401, nothing at {})",
                mcplex_config::redact_url(server_url),
                candidates.last().map(Url::as_str).unwrap_or_default()
            ))
        })?;
    let issuer = resource
        .authorization_servers
        .first()
        .cloned()
        .ok_or_else(|| {
            OAuthError::Metadata(
                "the protected resource metadata names no authorization server".into(),
            )
        })?;
    let issuer_url = Url::parse(&issuer).map_err(|e| {
        OAuthError::Metadata(format!("authorization server {issuer:?} is not a URL: {e}"))
    })?;
    refuse_cleartext("the authorization server", &issuer)?;
    let server: ServerMetadata = first_document(
        http,
        &server_metadata_urls(&issuer_url),
        "authorization server",
    )
    .await?
    .ok_or_else(|| {
        OAuthError::Discovery(format!(
            "authorization server {} serves no metadata (RFC 8414 or OpenID configuration)",
            mcplex_config::redact_url(&issuer)
        ))
    })?;
    judge(server_url, resource, server, &issuer)
}

pub(crate) fn judge(
    server_url: &str,
    resource: ResourceMetadata,
    server: ServerMetadata,
    issuer: &str,
) -> Result<Discovered, OAuthError> {
    let token_endpoint = server.token_endpoint.ok_or_else(|| {
        OAuthError::Metadata("the authorization server metadata has no token_endpoint".into())
    })?;
    if let Some(methods) = &server.code_challenge_methods_supported
        && !methods.iter().any(|m| m == "S256")
    {
        return Err(OAuthError::Metadata(
            "the authorization server does not support PKCE with S256".into(),
        ));
    }
    if let Some(named) = &resource.resource
        && !resource_covers(named, server_url)
    {
        return Err(OAuthError::Metadata(format!(
            "the protected resource metadata is for {}, not for {}",
            mcplex_config::redact_url(named),
            mcplex_config::redact_url(server_url)
        )));
    }
    // RFC 8414 §3.3: the metadata must be the issuer's own.
    if let Some(said) = &server.issuer
        && !same_issuer(said, issuer)
    {
        return Err(OAuthError::Metadata(format!(
            "the authorization server metadata names issuer {}, not {}",
            mcplex_config::redact_url(said),
            mcplex_config::redact_url(issuer)
        )));
    }
    refuse_cleartext("the issuer", server.issuer.as_deref().unwrap_or(issuer))?;
    for (what, endpoint) in [
        (
            "authorization_endpoint",
            server.authorization_endpoint.as_deref(),
        ),
        ("token_endpoint", Some(token_endpoint.as_str())),
        (
            "registration_endpoint",
            server.registration_endpoint.as_deref(),
        ),
    ] {
        if let Some(endpoint) = endpoint {
            refuse_cleartext(what, endpoint)?;
        }
    }
    Ok(Discovered {
        // RFC 9728 requires `resource`; without it the server's URL names the resource, as
        // configured (an authorization server may compare it exactly), but never with a
        // credential its query or user info carries.
        resource: resource
            .resource
            .unwrap_or_else(|| resource_named_by(server_url)),
        issuer: server.issuer.unwrap_or_else(|| issuer.to_owned()),
        authorization_endpoint: server.authorization_endpoint,
        token_endpoint,
        registration_endpoint: server.registration_endpoint,
        scopes_supported: resource.scopes_supported,
    })
}

/// Refuses an authorization server URL that is not `https` (plain `http` only on loopback):
/// codes, verifiers, refresh tokens and client secrets would cross the network in clear.
fn refuse_cleartext(what: &str, url: &str) -> Result<(), OAuthError> {
    if protected_in_transit(url) {
        return Ok(());
    }
    Err(OAuthError::Metadata(format!(
        "{what} {} is not https (plain http is accepted on loopback only): codes, tokens and secrets would travel in clear",
        mcplex_config::redact_url(url)
    )))
}

/// `https`, or `http` to a loopback host.
pub(crate) fn protected_in_transit(url: &str) -> bool {
    let Ok(url) = Url::parse(url) else {
        return false;
    };
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

/// Whether protected resource metadata for `resource` may speak for `server_url` (RFC 9728
/// §3.3): the same origin, and the server's path at or below the resource's.
pub fn resource_covers(resource: &str, server_url: &str) -> bool {
    let (Ok(resource), Ok(server)) = (Url::parse(resource), Url::parse(server_url)) else {
        return false;
    };
    let path = |url: &Url| format!("{}/", url.path().trim_end_matches('/'));
    resource.origin() == server.origin() && path(&server).starts_with(&path(&resource))
}

/// The metadata URL named by a server's `WWW-Authenticate: Bearer …` challenge, which the
/// caller saw (this crate never speaks a server's own protocol to provoke one), and only at the
/// server's own origin.
pub(crate) fn challenge_metadata_url(url: &Url, challenge: Option<&str>) -> Option<Url> {
    challenge
        .and_then(resource_metadata_of)
        .and_then(|named| bare(url).join(&named).ok())
        // Only the server's own origin speaks for it: a metadata URL elsewhere would make the
        // gateway fetch whatever any server that can answer 401 names.
        .filter(|named| named.origin() == url.origin())
}

/// The first of `urls` that answers 200 with a JSON document of type `T`; a 404 (or other
/// failure status) tries the next; a document that does not parse is an error.
async fn first_document<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    urls: &[Url],
    what: &str,
) -> Result<Option<T>, OAuthError> {
    let mut unreachable = None;
    for url in urls {
        let response = match http
            .get(url.clone())
            .header(ACCEPT, "application/json")
            .send()
            .await
        {
            Ok(response) => response,
            Err(e) => {
                unreachable = Some(format!("{}: {}", url, e.without_url()));
                continue;
            }
        };
        if !response.status().is_success() {
            continue;
        }
        let body = crate::read_capped(response)
            .await
            .map_err(|why| OAuthError::Unreachable(format!("{url}: {why}")))?;
        return serde_json::from_slice(&body).map(Some).map_err(|e| {
            OAuthError::Metadata(format!("the {what} metadata at {url} is malformed: {e}"))
        });
    }
    match unreachable {
        Some(reason) => Err(OAuthError::Unreachable(reason)),
        None => Ok(None),
    }
}
