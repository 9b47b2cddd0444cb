//! Any JSON compiles to a signature, deterministically, and lossy exactly when it says so.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let signature = mcplex_signature::compile(&schema);
    let text = signature.render("tool");
    assert_eq!(signature.is_lossy(), text.contains('~'));
    assert_eq!(mcplex_signature::compile(&schema).render("tool"), text);
});
