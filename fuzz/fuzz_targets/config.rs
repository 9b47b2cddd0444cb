//! Any text is either a config or a refusal naming what is wrong: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcplex_config::{Overrides, parse_config};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_config(text, "fuzz.json", &Overrides::default()) {
        Ok(config) => {
            let _ = config.defers_anything();
        }
        Err(error) => assert!(!error.to_string().is_empty()),
    }
});
