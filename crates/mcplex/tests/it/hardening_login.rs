//! Wrong keys at the dashboard's login are limited per client address (the third adversarial
//! review's fourth defect, last part): after ten in a minute, that address gets 429 with the
//! time to wait, whatever key it sends.

use serde_json::json;

use crate::harness::{Gateway, fixture_server, http_send};

fn login(gateway: &Gateway, key: &str) -> (u16, String) {
    let origin = format!("http://{}", gateway.authority());
    http_send(
        gateway.authority(),
        "POST",
        "/ui/login",
        &[("Origin", &origin), ("Content-Type", "application/json")],
        &json!({"key": key}).to_string(),
    )
}

#[test]
fn wrong_keys_are_limited_per_address() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let key = gateway.api_key();
    let (status, body) = login(&gateway, &key);
    assert_eq!(status, 200, "the right key logs in: {body}");
    for attempt in 0..10 {
        let (status, body) = login(&gateway, &format!("mcplex_admin_guess{attempt}"));
        assert_eq!(status, 401, "{body}");
    }
    let (status, body) = login(&gateway, "mcplex_admin_guess-next");
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("try again in"), "{body}");
    let (status, _) = login(&gateway, &key);
    assert_eq!(
        status, 429,
        "held back whatever it sends, until the window ends"
    );
    // The API key still works where it is presented as one (the CLI, the API).
    let (status, _) = gateway.api("GET", "/api/v1/servers", "");
    assert_eq!(status, 200);
}
