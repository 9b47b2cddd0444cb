//! The pure parts: challenge parsing, well-known URL construction, PKCE, expiry, redaction.

use url::Url;

use crate::*;

#[test]
fn a_bearer_challenge_names_its_resource_metadata() {
    assert_eq!(
        resource_metadata_of(
            r#"Bearer error="invalid_token", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#
        )
        .as_deref(),
        Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
    );
    assert_eq!(
        resource_metadata_of("bearer resource_metadata=https://a.example/m, scope=\"x y\"")
            .as_deref(),
        Some("https://a.example/m")
    );
    assert_eq!(
        resource_metadata_of(r#"Bearer realm="a\"b", resource_metadata="u""#).as_deref(),
        Some("u")
    );
}

#[test]
fn other_challenges_name_nothing() {
    assert_eq!(resource_metadata_of(r#"Basic realm="x""#), None);
    assert_eq!(resource_metadata_of(r#"Bearer realm="x""#), None);
    assert_eq!(resource_metadata_of(""), None);
    assert_eq!(resource_metadata_of("Bearer resource_metadata"), None);
    assert_eq!(
        resource_metadata_of(r#"Bearer resource_metadata="unterminated"#).as_deref(),
        Some("unterminated")
    );
}

fn urls(list: Vec<Url>) -> Vec<String> {
    list.into_iter().map(String::from).collect()
}

#[test]
fn resource_metadata_is_looked_for_with_the_path_inserted_then_at_the_root() {
    // Without the configured URL's credentials: these addresses are fetched and shown in errors.
    let server = Url::parse("https://user:pw@mcp.example.com/public/mcp?key=k#f").expect("url");
    assert_eq!(
        urls(resource_metadata_urls(&server)),
        [
            "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
            "https://mcp.example.com/.well-known/oauth-protected-resource",
        ]
    );
    let root = Url::parse("http://localhost:3000/").expect("url");
    assert_eq!(
        urls(resource_metadata_urls(&root)),
        ["http://localhost:3000/.well-known/oauth-protected-resource"]
    );
}

#[test]
fn server_metadata_tries_oauth_then_openid_in_the_order_the_specs_give() {
    let issuer = Url::parse("https://user:pw@auth.example.com/tenant1?key=k").expect("url");
    assert_eq!(
        urls(server_metadata_urls(&issuer)),
        [
            "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
            "https://auth.example.com/.well-known/openid-configuration/tenant1",
            "https://auth.example.com/tenant1/.well-known/openid-configuration",
        ]
    );
    let root = Url::parse("https://auth.example.com").expect("url");
    assert_eq!(
        urls(server_metadata_urls(&root)),
        [
            "https://auth.example.com/.well-known/oauth-authorization-server",
            "https://auth.example.com/.well-known/openid-configuration",
        ]
    );
}

#[test]
fn the_pkce_challenge_is_s256_of_the_verifier() {
    // RFC 7636, appendix B.
    assert_eq!(
        challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    );
    let pkce = Pkce::generate().expect("random");
    assert_eq!(pkce.verifier.expose().len(), 43);
    assert_eq!(pkce.challenge, challenge_of(pkce.verifier.expose()));
    assert_ne!(Pkce::generate().expect("random").verifier, pkce.verifier);
}

#[test]
fn the_authorization_url_carries_pkce_state_and_resource() {
    let url = authorization_url(&AuthorizationRequest {
        endpoint: "https://auth.example.com/authorize?tenant=a",
        client_id: "c 1",
        redirect_uri: "http://127.0.0.1:5000/callback",
        challenge: "ch",
        state: "st",
        scope: Some("read write"),
        resource: "https://mcp.example.com/mcp",
    })
    .expect("url");
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("tenant"), Some("a"));
    assert_eq!(get("response_type"), Some("code"));
    assert_eq!(get("client_id"), Some("c 1"));
    assert_eq!(get("code_challenge_method"), Some("S256"));
    assert_eq!(get("state"), Some("st"));
    assert_eq!(get("scope"), Some("read write"));
    assert_eq!(get("resource"), Some("https://mcp.example.com/mcp"));
}

fn login(expires_at: Option<i64>, obtained_at: i64) -> StoredLogin {
    StoredLogin {
        server_url: "https://mcp.example.com/mcp".into(),
        issuer: "https://auth.example.com".into(),
        token_endpoint: "https://auth.example.com/token".into(),
        resource: "https://mcp.example.com/mcp".into(),
        client_id: "client".into(),
        client_secret: Some(Secret::new("client-secret-value")),
        access_token: Secret::new("access-token-value"),
        refresh_token: Some(Secret::new("refresh-token-value")),
        expires_at,
        obtained_at,
        scope: None,
    }
}

#[test]
fn a_token_is_renewed_a_quarter_of_its_life_before_it_expires_at_most_a_minute() {
    let hour = login(Some(1000 + 3600), 1000);
    assert!(!hour.expiring(1000 + 3600 - 61));
    assert!(hour.expiring(1000 + 3600 - 60));
    let short = login(Some(1000 + 8), 1000);
    assert!(!short.expiring(1000 + 5));
    assert!(short.expiring(1000 + 6));
    assert!(!login(None, 0).expiring(i64::MAX));
}

#[test]
fn a_refresh_that_does_not_rotate_keeps_the_refresh_token() {
    let old = login(Some(10), 0);
    let kept = old.renewed(Granted {
        access_token: Secret::new("new-access"),
        refresh_token: None,
        expires_at: Some(100),
        scope: None,
    });
    assert_eq!(kept.refresh_token, old.refresh_token);
    assert_eq!(kept.access_token.expose(), "new-access");
    let rotated = old.renewed(Granted {
        access_token: Secret::new("new-access"),
        refresh_token: Some(Secret::new("new-refresh")),
        expires_at: Some(100),
        scope: None,
    });
    assert_eq!(
        rotated
            .refresh_token
            .map(|s| s.expose().to_owned())
            .as_deref(),
        Some("new-refresh")
    );
}

#[test]
fn no_secret_prints() {
    let shown = format!(
        "{:?} {}",
        login(Some(1), 0),
        Secret::new("access-token-value")
    );
    for secret in [
        "access-token-value",
        "refresh-token-value",
        "client-secret-value",
    ] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    // Serialization (for the sealed store) keeps the values.
    let json = serde_json::to_string(&login(Some(1), 0)).expect("json");
    assert!(json.contains("refresh-token-value"));
}

#[test]
fn only_a_refused_grant_or_a_missing_login_needs_a_person() {
    let token = |code: &str| OAuthError::Token {
        code: code.into(),
        detail: String::new(),
    };
    assert!(token("invalid_grant").needs_login());
    assert!(OAuthError::NoLogin("x".into()).needs_login());
    assert!(!token("temporarily_unavailable").needs_login());
    assert!(!OAuthError::Unreachable("down".into()).needs_login());
}

#[test]
fn resource_metadata_speaks_only_for_its_own_origin_and_path() {
    let server = "https://mcp.example.com/tenant/mcp";
    assert!(resource_covers(
        "https://mcp.example.com/tenant/mcp",
        server
    ));
    assert!(resource_covers(
        "https://mcp.example.com/tenant/mcp/",
        server
    ));
    assert!(resource_covers("https://mcp.example.com/", server));
    assert!(resource_covers("https://mcp.example.com", server));
    assert!(!resource_covers("https://mcp.example.com/other", server));
    assert!(!resource_covers("https://mcp.example.com/ten", server));
    assert!(!resource_covers(
        "https://evil.example.com/tenant/mcp",
        server
    ));
    assert!(!resource_covers(
        "http://mcp.example.com/tenant/mcp",
        server
    ));
    assert!(!resource_covers("not a url", server));
}

/// One HTTP answer of `size` bytes on a loopback port; returns the port.
async fn serve_once(size: usize) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        let mut request = [0u8; 1024];
        let _ = socket.read(&mut request).await;
        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {size}\r\n\r\n");
        let _ = socket.write_all(head.as_bytes()).await;
        let _ = socket.write_all(&vec![b' '; size]).await;
    });
    port
}

#[tokio::test]
async fn an_answer_is_read_up_to_the_cap_and_refused_past_it() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    for (size, fits) in [(1000, true), (MAX_ANSWER_BYTES + 1, false)] {
        let port = serve_once(size).await;
        let response = client
            .get(format!("http://127.0.0.1:{port}/"))
            .send()
            .await
            .expect("an answer");
        match read_capped(response).await {
            Ok(body) => assert!(fits && body.len() == size, "{size} bytes read"),
            Err(why) => assert!(!fits && why.to_string().contains("over"), "{size}: {why}"),
        }
    }
}

#[test]
fn an_error_description_is_logged_printable_and_short() {
    let long = format!("bad\n{}", "x".repeat(1000));
    let text = protocol::error_text_for_tests(
        serde_json::json!({"error": "invalid_grant", "error_description": long})
            .to_string()
            .as_bytes(),
    );
    assert!(text.starts_with(": invalid_grant (badxxx"), "{text}");
    assert!(!text.contains('\n') && text.chars().count() < 240, "{text}");
}

#[test]
fn authorization_servers_must_be_https_off_loopback() {
    use crate::discovery::protected_in_transit;
    for (url, fine) in [
        ("https://auth.example/token", true),
        ("http://127.0.0.1:9000/token", true),
        ("http://localhost/token", true),
        ("http://[::1]:80/token", true),
        ("http://auth.example/token", false),
        ("http://10.0.0.5/token", false),
        ("ftp://auth.example/token", false),
        ("not a url", false),
    ] {
        assert_eq!(protected_in_transit(url), fine, "{url}");
    }
    let resource = serde_json::from_value(serde_json::json!({
        "resource": "https://mcp.example/mcp", "authorization_servers": ["https://auth.example"]}))
    .expect("resource metadata");
    let server = serde_json::from_value(serde_json::json!({
        "issuer": "https://auth.example",
        "authorization_endpoint": "https://auth.example/authorize",
        "token_endpoint": "http://auth.example/token"}))
    .expect("server metadata");
    let refused = crate::discovery::judge(
        "https://mcp.example/mcp",
        resource,
        server,
        "https://auth.example",
    )
    .expect_err("a cleartext token endpoint");
    assert!(refused.to_string().contains("token_endpoint"), "{refused}");
}

#[test]
fn a_challenge_names_metadata_only_at_the_servers_own_origin() {
    let url = Url::parse("http://127.0.0.1:9/mcp").expect("url");
    let elsewhere = r#"Bearer resource_metadata="http://169.254.169.254/latest/meta-data""#;
    assert_eq!(
        crate::discovery::challenge_metadata_url(&url, Some(elsewhere)),
        None,
        "a metadata URL at another origin is not followed"
    );
    let own = r#"Bearer error="invalid_token", resource_metadata="/.well-known/oauth-protected-resource/mcp""#;
    assert_eq!(
        crate::discovery::challenge_metadata_url(&url, Some(own)).map(|u| u.path().to_owned()),
        Some("/.well-known/oauth-protected-resource/mcp".to_owned())
    );
    assert_eq!(crate::discovery::challenge_metadata_url(&url, None), None);
    // Fetched and named in errors: without the configured URL's credentials.
    let with_credentials = Url::parse("http://user:pw@127.0.0.1:9/mcp?key=k").expect("url");
    assert_eq!(
        crate::discovery::challenge_metadata_url(&with_credentials, Some(own)).map(String::from),
        Some("http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp".to_owned())
    );
}

#[test]
fn a_resource_named_by_the_servers_url_keeps_it_unless_it_carries_credentials() {
    for (url, resource) in [
        ("https://mcp.example.com", "https://mcp.example.com"),
        ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp"),
        (
            "https://mcp.example.com/mcp?api_key=k",
            "https://mcp.example.com/mcp",
        ),
        (
            "https://u:p@mcp.example.com/mcp",
            "https://mcp.example.com/mcp",
        ),
    ] {
        assert_eq!(crate::discovery::resource_named_by(url), resource, "{url}");
    }
}

#[test]
fn an_issuer_with_or_without_its_trailing_slash_is_the_same() {
    assert!(crate::same_issuer("https://id/", "https://id"));
    assert!(crate::same_issuer(
        "https://id/realms/a",
        "https://id/realms/a/"
    ));
    assert!(!crate::same_issuer("https://id2", "https://id"));
}
