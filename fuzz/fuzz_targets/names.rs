//! Sanitized parts only hold name characters, and a registration table resolves every name it gives out
//! back to its id, whatever the ids are.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcplex_names::{RegistrationTable, ToolId, is_valid_name, sanitize};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Characters only: shortening to 64 needs the whole table, which is checked below.
    let part = sanitize(&text);
    assert!(!part.is_empty() && is_valid_name(&part.chars().take(64).collect::<String>()));
    let ids: Vec<ToolId> = text
        .split('\n')
        .take(64)
        .filter_map(|line| {
            let (server, tool) = line.split_once('\t')?;
            (!server.is_empty() && !tool.is_empty() && !server.contains(':'))
                .then(|| ToolId::new(server, tool))
        })
        .collect();
    let table = RegistrationTable::build(ids.clone());
    for id in &ids {
        let name = table.name_of(id).expect("every id is named");
        assert!(is_valid_name(name), "{name:?}");
        assert_eq!(table.resolve(name), Some(id));
    }
});
