//! How many values a JSON text holds, counted over its bytes before anything is parsed. A tree of
//! small values costs hundreds of bytes per value once parsed and decoded (a 4 MiB body of
//! `{"a":0}` objects took 700 MB), so a body holding more values than any MCP request needs is
//! refused unread, as one nested deeper than the parser's limit is.

/// The most values a request body may hold: tool arguments an agent writes hold hundreds.
pub(crate) const MAX_VALUES: usize = 100_000;

/// Whether `json` holds more than `max` values (an object member counts its key and its value).
/// A lower bound for text that is not JSON, which the parser then refuses anyway.
pub(crate) fn more_values_than(json: &[u8], max: usize) -> bool {
    // Every value but the first follows a `,` or a `:` or opens an array, outside strings.
    let mut values = 1usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in json {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b',' | b':' | b'[' => {
                values += 1;
                if values > max {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::more_values_than;

    #[test]
    fn values_are_counted_outside_strings() {
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a,b:[c","arguments":{"x":[1,2,3]}}}"#;
        // jsonrpc, id, method, params, name, arguments, x, the array and its three items, with
        // their keys: 17 at most.
        assert!(!more_values_than(call, 17));
        assert!(more_values_than(call, 10));
        assert!(!more_values_than(br#""\",,,,\\""#, 1));
        let flood = format!("[{}0]", "0,".repeat(200_000));
        assert!(more_values_than(flood.as_bytes(), super::MAX_VALUES));
    }
}
