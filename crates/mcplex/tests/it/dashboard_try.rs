//! Try a tool in the browser with what a tool may return besides text: an image, decoded under
//! the page's Content-Security-Policy (the rest of Try a tool is in `dashboard.rs`'s review).

use serde_json::json;

use crate::browser::{browse, chromium};
use crate::harness::{Gateway, fixture_server};

#[test]
fn try_a_tool_shows_an_image_the_tool_returned() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    // A 3×2 PNG, as a tool returns one: base64 in an image content block.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAAEElEQVR4nGP4z8AAQQxwFgBB0gX7h/C5SAAAAABJRU5ErkJggg==";
    let tools = dir.path().join("pics.json");
    let picture = json!([{"name": "picture", "description": "Returns a picture.",
        "inputSchema": {"type": "object"},
        "x-fixture-result": {"content": [{"type": "image", "data": png, "mimeType": "image/png"}]}}]);
    std::fs::write(&tools, picture.to_string()).expect("tools file");
    let tools = tools.to_string_lossy().into_owned();
    let gateway = Gateway::start(json!({"mcpServers": {
        "pics": fixture_server("pics", &["--no-kit", "--raw-tools", &tools]),
    }}));
    gateway.wait_ready();
    let seen = browse(&gateway, &browser, "media", "");
    assert_eq!(seen["image_size"], json!([3, 2]), "{seen}");
    assert_eq!(seen["outcome"], "Result", "{seen}");
    assert_eq!(
        seen["required_legend"], 0,
        "a tool without arguments: {seen}"
    );
    assert_eq!(
        seen["image_alt"], "An image the tool returned (image/png)",
        "{seen}"
    );
    assert_eq!(seen["policy_violations"], json!([]), "{seen}");
}
