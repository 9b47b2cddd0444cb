//! The audit log read back for export, in pages by (time, row id), and trimmed to its newest
//! rows, on each store the tests reach.

use crate::tests::places;
use crate::*;

/// An export reads every selected row once, oldest first, across pages, ties of time broken by
/// insertion; the row limit keeps exactly the newest rows.
#[test]
fn the_audit_log_exports_in_pages_and_keeps_the_newest_rows() {
    for place in places("audit_export") {
        let (store, _) = place.open();
        let rows: Vec<Activity> = (0..25)
            .map(|i| Activity {
                // Three rows share each millisecond: the page boundaries fall inside ties.
                at_ms: 1000 + i / 3,
                request_id: format!("r{i}"),
                token: None,
                tool: format!("s:tool{}", i % 2),
                status: "ok".to_owned(),
                duration_us: i,
                request_bytes: 0,
                response_bytes: 0,
                arguments: None,
                replica: None,
                method: "tools/call".to_owned(),
            })
            .collect();
        store.record_activity(&rows, 0).expect("record");
        let export = |query: &ActivityQuery| {
            let (mut after, mut ids) = (None, Vec::new());
            loop {
                let page = store.activity_after(query, after, 4).expect("page");
                let Some((cursor, _)) = page.last() else {
                    break ids;
                };
                after = Some(*cursor);
                ids.extend(page.into_iter().map(|(_, row)| row.request_id));
            }
        };
        let all: Vec<String> = rows.iter().map(|r| r.request_id.clone()).collect();
        assert_eq!(export(&ActivityQuery::default()), all);
        let since = ActivityQuery {
            since_ms: Some(1007),
            tool: Some("tool1".into()),
            ..ActivityQuery::default()
        };
        assert_eq!(export(&since), ["r21", "r23"]);

        assert_eq!(store.keep_newest_activity(100).expect("keep"), 0);
        assert_eq!(store.keep_newest_activity(10).expect("keep"), 15);
        assert_eq!(export(&ActivityQuery::default()), all[15..]);
    }
}
