//! The audit log over time: calls, failures and latency per time bucket, every replica's, for
//! the dashboard's trends. The operators' own actions are not calls and are left out.

use crate::sql::{Mode, Param};
use crate::{StateError, Store};

/// One bucket of the audit log (only buckets with rows are returned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrendBucket {
    /// Unix milliseconds the bucket starts at (a multiple of the bucket length).
    pub start_ms: i64,
    pub calls: i64,
    /// Of those, the ones whose outcome was not `ok`.
    pub errors: i64,
    pub avg_duration_us: i64,
    pub max_duration_us: i64,
}

impl Store {
    /// The rows since `since_ms` in buckets of `bucket_ms` (at least 1), oldest first.
    pub fn activity_trend(
        &self,
        since_ms: i64,
        bucket_ms: i64,
    ) -> Result<Vec<TrendBucket>, StateError> {
        let bucket_ms = bucket_ms.max(1);
        let rows = self.db.transaction(Mode::Read, |tx| {
            tx.query(
                "SELECT (at_ms / ?2) * ?2 AS bucket, COUNT(*),
                        CAST(SUM(CASE WHEN status = 'ok' THEN 0 ELSE 1 END) AS BIGINT),
                        CAST(AVG(duration_us) AS BIGINT), MAX(duration_us)
                 FROM activity
                 WHERE at_ms >= ?1 AND (token IS NULL OR token NOT LIKE 'operator:%')
                 GROUP BY bucket ORDER BY bucket",
                &[Param::Int(since_ms), Param::Int(bucket_ms)],
            )
        })?;
        rows.iter()
            .map(|row| {
                Ok(TrendBucket {
                    start_ms: row.int(0)?,
                    calls: row.int(1)?,
                    errors: row.int(2)?,
                    avg_duration_us: row.int(3)?,
                    max_duration_us: row.int(4)?,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::places;
    use crate::{Activity, TrendBucket};

    #[test]
    fn the_audit_log_is_counted_over_time_without_the_operators_actions() {
        for place in places("trend") {
            let (store, _) = place.open();
            let row = |at_ms: i64, token: Option<&str>, status: &str, duration_us: i64| Activity {
                at_ms,
                request_id: format!("t{at_ms}"),
                token: token.map(str::to_owned),
                tool: "a:x".to_owned(),
                status: status.to_owned(),
                duration_us,
                request_bytes: 0,
                response_bytes: 0,
                arguments: None,
                replica: None,
                method: "tools/call".to_owned(),
            };
            store
                .record_activity(
                    &[
                        row(60_000, None, "ok", 1000),
                        row(61_000, Some("ci"), "timeout", 3000),
                        row(125_000, Some("ci"), "ok", 500),
                        row(126_000, Some("operator:alice"), "ok", 10),
                    ],
                    0,
                )
                .expect("record");
            let trend = store.activity_trend(0, 60_000).expect("trend");
            assert_eq!(
                trend,
                [
                    TrendBucket {
                        start_ms: 60_000,
                        calls: 2,
                        errors: 1,
                        avg_duration_us: 2000,
                        max_duration_us: 3000,
                    },
                    TrendBucket {
                        start_ms: 120_000,
                        calls: 1,
                        errors: 0,
                        avg_duration_us: 500,
                        max_duration_us: 500,
                    },
                ]
            );
            assert!(
                store
                    .activity_trend(200_000, 60_000)
                    .expect("trend")
                    .is_empty()
            );
        }
    }
}
