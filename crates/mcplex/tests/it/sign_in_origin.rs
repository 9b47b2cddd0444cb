//! A sign-in begun on an origin other than the public one moves there first (the state cookie
//! must be where the issuer sends the browser back), and only once: behind a proxy that rewrites
//! `Host`, the public origin itself looks like another one, and a second move would be a loop.

use serde_json::json;

use crate::harness::{Gateway, fixture_server, free_port};
use crate::http::{Version, exchange};
use crate::sign_in::{CLIENT_SECRET, oidc_provider};

#[test]
fn a_sign_in_moves_to_the_public_origin_once() {
    let (gateway_port, provider_port) = (free_port(), free_port());
    let public = format!("http://localhost:{gateway_port}");
    let _provider = oidc_provider(provider_port, &format!("{public}/ui/oidc/callback"), None);
    let issuer = format!("http://127.0.0.1:{provider_port}");
    let gateway = Gateway::start_at(
        json!({
            "auth": {
                "issuer": issuer,
                "audience": "mcplex",
                "resource": format!("{public}/mcp"),
                "rules": [{"claim": "groups", "value": "mcp-admins", "permissions": ["read"]}],
                "dashboard": {
                    "client_id": "dashboard",
                    "client_secret": CLIENT_SECRET,
                    "operators": [{"claim": "groups", "value": "mcp-admins"}]
                }
            },
            "mcpServers": {"fixture": fixture_server("fixture", &[])}
        }),
        "127.0.0.1",
        gateway_port,
        &[],
    );
    gateway.wait_ready();
    let authority = gateway.authority();
    let first = exchange(authority, Version::Http11, "GET", "/ui/oidc/login", &[], "");
    assert_eq!(
        first.header("location"),
        Some(format!("{public}/ui/oidc/login?moved=1").as_str()),
        "{first:?}"
    );
    // Arrived as a proxy that rewrites Host delivers it: on to the issuer, not moved again.
    let second = exchange(
        authority,
        Version::Http11,
        "GET",
        "/ui/oidc/login?moved=1",
        &[],
        "",
    );
    let location = second.header("location").unwrap_or_default().to_owned();
    assert!(location.starts_with(&issuer), "{second:?}");
}
