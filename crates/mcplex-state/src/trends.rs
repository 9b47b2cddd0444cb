//! The audit log over time: calls, failures and latency (median, 95th percentile, longest)
//! per time bucket, every replica's, for the dashboard's trends, over every call or one
//! server's or one tool's. The operators' own actions are not calls and are left out.
//! Percentiles are nearest-rank, computed by the database with window functions (one query for
//! SQLite and PostgreSQL alike).

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
    /// The median duration (nearest rank).
    pub p50_duration_us: i64,
    /// The 95th percentile duration (nearest rank).
    pub p95_duration_us: i64,
    pub max_duration_us: i64,
}

/// Whose calls a trend counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrendScope<'a> {
    All,
    /// One server's tools (`tool` ids `server:*`).
    Server(&'a str),
    /// One tool, by its id (`server:tool`).
    Tool(&'a str),
}

impl Store {
    /// The calls in `scope` since `since_ms` in buckets of `bucket_ms` (at least 1), oldest
    /// first.
    pub fn activity_trend(
        &self,
        since_ms: i64,
        bucket_ms: i64,
        scope: TrendScope<'_>,
    ) -> Result<Vec<TrendBucket>, StateError> {
        let bucket_ms = bucket_ms.max(1);
        let prefix;
        let (clause, scoped) = match scope {
            TrendScope::All => ("", None),
            TrendScope::Server(server) => {
                prefix = format!("{server}:");
                (
                    "AND substr(tool, 1, length(CAST(?3 AS TEXT))) = CAST(?3 AS TEXT)",
                    Some(prefix.as_str()),
                )
            }
            TrendScope::Tool(tool) => ("AND tool = CAST(?3 AS TEXT)", Some(tool)),
        };
        let sql = format!(
            "SELECT bucket, COUNT(*),
                    CAST(SUM(CASE WHEN status = 'ok' THEN 0 ELSE 1 END) AS BIGINT),
                    MAX(CASE WHEN place = (n + 1) / 2 THEN duration_us END),
                    MAX(CASE WHEN place = (95 * n + 99) / 100 THEN duration_us END),
                    MAX(duration_us)
             FROM (SELECT (at_ms / ?2) * ?2 AS bucket, status, duration_us,
                          ROW_NUMBER() OVER (PARTITION BY at_ms / ?2 ORDER BY duration_us) AS place,
                          COUNT(*) OVER (PARTITION BY at_ms / ?2) AS n
                   FROM activity
                   WHERE at_ms >= ?1 AND (token IS NULL OR token NOT LIKE 'operator:%') {clause})
                  AS ranked
             GROUP BY bucket ORDER BY bucket"
        );
        let mut params = vec![Param::Int(since_ms), Param::Int(bucket_ms)];
        params.extend(scoped.map(Param::Text));
        let rows = self
            .db
            .transaction(Mode::Read, |tx| tx.query(&sql, &params))?;
        rows.iter()
            .map(|row| {
                Ok(TrendBucket {
                    start_ms: row.int(0)?,
                    calls: row.int(1)?,
                    errors: row.int(2)?,
                    p50_duration_us: row.int(3)?,
                    p95_duration_us: row.int(4)?,
                    max_duration_us: row.int(5)?,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::places;
    use crate::{Activity, TrendBucket, TrendScope};

    fn row(
        at_ms: i64,
        tool: &str,
        token: Option<&str>,
        status: &str,
        duration_us: i64,
    ) -> Activity {
        Activity {
            at_ms,
            request_id: format!("t{at_ms}-{tool}-{duration_us}"),
            token: token.map(str::to_owned),
            tool: tool.to_owned(),
            status: status.to_owned(),
            duration_us,
            request_bytes: 0,
            response_bytes: 0,
            arguments: None,
            replica: None,
            method: "tools/call".to_owned(),
        }
    }

    #[test]
    fn the_audit_log_is_counted_over_time_without_the_operators_actions() {
        for place in places("trend") {
            let (store, _) = place.open();
            let mut rows = vec![
                row(60_000, "a:x", None, "ok", 1000),
                row(61_000, "a:x", Some("ci"), "timeout", 3000),
                row(125_000, "a:x", Some("ci"), "ok", 500),
                row(126_000, "a:x", Some("operator:alice"), "ok", 10),
            ];
            // Twenty calls of 1..=20 ms in one bucket, to another server whose name starts
            // like the first one's.
            rows.extend((1..=20).map(|ms| row(180_000 + ms, "ab:y", None, "ok", ms * 1000)));
            store.record_activity(&rows, 0).expect("record");
            let bucket = |start_ms, calls, errors, p50, p95, max| TrendBucket {
                start_ms,
                calls,
                errors,
                p50_duration_us: p50,
                p95_duration_us: p95,
                max_duration_us: max,
            };
            let of_a = [
                bucket(60_000, 2, 1, 1000, 3000, 3000),
                bucket(120_000, 1, 0, 500, 500, 500),
            ];
            let of_ab = bucket(180_000, 20, 0, 10_000, 19_000, 20_000);
            let trend = |scope| store.activity_trend(0, 60_000, scope).expect("trend");
            let mut all = of_a.to_vec();
            all.push(of_ab.clone());
            assert_eq!(trend(TrendScope::All), all);
            assert_eq!(trend(TrendScope::Server("a")), of_a, "not ab's calls");
            assert_eq!(
                trend(TrendScope::Server("ab")),
                std::slice::from_ref(&of_ab)
            );
            assert_eq!(trend(TrendScope::Tool("ab:y")), [of_ab]);
            assert!(trend(TrendScope::Tool("a:y")).is_empty());
            assert!(trend(TrendScope::Server("b")).is_empty());
            assert!(
                store
                    .activity_trend(200_000, 60_000, TrendScope::All)
                    .expect("trend")
                    .is_empty()
            );
        }
    }
}
