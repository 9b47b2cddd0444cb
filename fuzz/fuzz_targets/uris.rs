//! Resource URIs and templates: namespacing is reversible for any server name and URI, and
//! matching any template (an upstream's) against any URI (a client's) ends without panicking.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcplex_catalog::{namespaced_uri, split_namespaced_uri, template_matches};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (first, second) = text.split_once('\n').unwrap_or((text, ""));
    let _ = template_matches(first, second);
    if !first.is_empty() {
        let namespaced = namespaced_uri(first, second);
        assert_eq!(
            split_namespaced_uri(&namespaced),
            Some((first.to_owned(), second))
        );
        // A namespaced template still matches the namespaced expansions of its own literal text.
        if !first.contains(['{', '}']) && !second.contains(['{', '}']) {
            assert!(template_matches(&namespaced, &namespaced));
        }
    }
});
