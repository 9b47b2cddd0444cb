//! Listings' limits: a server whose pages never end is refused past the items or bytes a
//! listing may hold, with a reason that says so.
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::*;

/// A connection to a server that answers every `tools/list` with `page` and a new cursor.
fn endless(page: Vec<Value>) -> Arc<RpcConnection> {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let (reads, mut writes) = tokio::io::split(theirs);
        let mut lines = BufReader::new(reads).lines();
        let mut next = 0u64;
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(request) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            next += 1;
            let answer = json!({"jsonrpc": "2.0", "id": request["id"],
                "result": {"tools": page, "nextCursor": next.to_string()}});
            if writes
                .write_all(format!("{answer}\n").as_bytes())
                .await
                .is_err()
            {
                return;
            }
        }
    });
    crate::rpc::tests::over_lines("endless", ours)
}

async fn listed(page: Vec<Value>) -> Result<Vec<Value>, UpstreamError> {
    let connection = endless(page);
    let listing = list_tools(&connection, Duration::from_secs(10));
    tokio::time::timeout(Duration::from_secs(15), listing)
        .await
        .expect("the listing ends within 15 s")
}

#[tokio::test]
async fn a_listing_too_large_in_items_or_bytes_is_refused_saying_which() {
    let many: Vec<Value> = (0..1000)
        .map(|n| json!({"name": format!("t{n}")}))
        .collect();
    let big = vec![json!({"name": "big", "description": "d".repeat(8 * 1024 * 1024)})];
    for (page, said) in [(many, "at most 10000 items"), (big, "64 MiB")] {
        let outcome = listed(page).await;
        let Err(error) = outcome else {
            panic!(
                "refused, not {} items",
                outcome.map(|t| t.len()).unwrap_or_default()
            );
        };
        assert!(
            matches!(error, UpstreamError::ListingTooLarge { .. }),
            "{error}"
        );
        assert!(error.to_string().contains(said), "{error}");
    }
}
