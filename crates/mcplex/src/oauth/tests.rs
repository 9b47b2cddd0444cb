//! The JWT matrix against keys held in memory: what is accepted, and each way a token is refused.
//! (The integration tests run the same matrix against a real authorization server.)

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcplex_config::{AuthRule, AuthSettings, RuleMatch};
use mcplex_trust::Permission;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

use super::*;

/// Nothing listens there: a refresh fails at once.
const ISSUER: &str = "http://127.0.0.1:1";
const AUDIENCE: &str = "http://127.0.0.1:8080/mcp";

struct Signer {
    encoding: EncodingKey,
    /// The public key's x coordinate: stands in for "the public key" as an HMAC secret.
    public_x: Vec<u8>,
    jwk: Value,
}

fn signer(kid: &str) -> Signer {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .expect("a P-256 key is generated");
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .expect("the key parses");
    let point = pair.public_key().as_ref();
    let (x, y) = (&point[1..33], &point[33..65]);
    Signer {
        encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
        public_x: x.to_vec(),
        jwk: json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
            "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y)}),
    }
}

fn settings() -> AuthSettings {
    AuthSettings {
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        resource: None,
        algorithms: vec!["ES256".into(), "RS256".into()],
        leeway: Duration::from_secs(5),
        rules: vec![AuthRule {
            when: RuleMatch::Scope("mcp:read".into()),
            servers: None,
            permissions: ["read".to_owned()].into(),
            profile: None,
        }],
        dashboard: None,
    }
}

fn tokens(signer: &Signer) -> OAuthTokens {
    // What `main` does first.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let keys = IssuerKeys::with_jwks(ISSUER, &json!({"keys": [signer.jwk]}))
        .expect("the key cache is built");
    OAuthTokens::with_keys(&settings(), &[], keys).expect("the settings are valid")
}

fn now() -> i64 {
    mcplex_state::now_unix()
}

fn claims() -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "scope": "mcp:read",
        "iat": now(), "exp": now() + 300})
}

fn sign(signer: &Signer, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &signer.encoding).expect("the token is signed")
}

fn with(claims: Value, field: &str, value: Value) -> Value {
    let mut claims = claims;
    claims[field] = value;
    claims
}

#[tokio::test]
async fn a_valid_token_becomes_the_caller_its_rule_grants() {
    let key = signer("k1");
    let tokens = tokens(&key);
    let caller = tokens
        .check(&sign(&key, "k1", &claims()))
        .await
        .expect("accepted");
    assert_eq!(caller.token.as_deref(), Some("oauth:alice"));
    assert!(caller.scope.admits("any", Permission::Read));
    assert!(!caller.scope.admits("any", Permission::Write));
    let listed = with(claims(), "aud", json!(["https://other", AUDIENCE]));
    assert!(
        tokens.check(&sign(&key, "k1", &listed)).await.is_ok(),
        "aud as an array"
    );
    let slash = with(claims(), "iss", json!(format!("{ISSUER}/")));
    assert!(
        tokens.check(&sign(&key, "k1", &slash)).await.is_ok(),
        "issuer with a slash"
    );
}

#[tokio::test]
async fn a_valid_token_that_no_rule_matches_is_insufficient() {
    let key = signer("k1");
    let token = sign(&key, "k1", &with(claims(), "scope", json!("openid")));
    assert_eq!(
        tokens(&key).check(&token).await.err(),
        Some(TokenRefusal::InsufficientScope)
    );
}

#[tokio::test]
async fn every_bad_token_is_refused_with_its_reason() {
    let key = signer("k1");
    let other = signer("k1");
    let tokens = tokens(&key);
    let base64 = |value: &Value| URL_SAFE_NO_PAD.encode(value.to_string());
    let unsigned = format!(
        "{}.{}.",
        base64(&json!({"alg": "none", "typ": "JWT"})),
        base64(&claims())
    );
    let mut hmac_header = Header::new(Algorithm::HS256);
    hmac_header.kid = Some("k1".into());
    let hmac = jsonwebtoken::encode(
        &hmac_header,
        &claims(),
        &EncodingKey::from_secret(&key.public_x),
    )
    .expect("signed");
    let cases = [
        (
            with(claims(), "aud", json!("https://elsewhere/mcp")),
            "k1",
            "audience (aud)",
        ),
        (
            with(claims(), "iss", json!("https://evil.example.com")),
            "k1",
            "issuer (iss)",
        ),
        (with(claims(), "exp", json!(now() - 60)), "k1", "expired"),
        (
            with(claims(), "nbf", json!(now() + 600)),
            "k1",
            "not valid yet",
        ),
        (with(claims(), "exp", Value::Null), "k1", "exp"),
        (claims(), "k2", "unknown key"),
    ];
    for (claims, kid, reason) in cases {
        let refused = tokens
            .verifier
            .access_token(&sign(&key, kid, &claims), &tokens.audience)
            .await
            .err()
            .map(|e| e.to_string());
        assert!(
            refused.as_deref().is_some_and(|r| r.contains(reason)),
            "{claims} → {refused:?}"
        );
    }
    let forged = sign(&other, "k1", &claims());
    for (token, reason) in [
        (unsigned.as_str(), "none"),
        (hmac.as_str(), "HS256"),
        (forged.as_str(), "bad signature"),
        ("a.b.c", "malformed"),
        ("bm9wZQ.bm9wZQ.c2ln", "not a JWT"),
    ] {
        let refused = tokens
            .verifier
            .access_token(token, &tokens.audience)
            .await
            .err()
            .map(|e| e.to_string());
        assert!(
            refused.as_deref().is_some_and(|r| r.contains(reason)),
            "{reason} → {refused:?}"
        );
        assert!(
            !refused.unwrap_or_default().contains(token),
            "never the token"
        );
        assert_eq!(tokens.check(token).await.err(), Some(TokenRefusal::Invalid));
    }
}
