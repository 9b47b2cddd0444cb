//! Latency statistics.

use std::time::Duration;

use serde::Serialize;

/// Summary of one measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    pub calls: usize,
    pub errors: usize,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub throughput_per_s: f64,
}

impl Stats {
    pub fn from(mut latencies: Vec<Duration>, errors: usize, wall: Duration) -> Stats {
        latencies.sort();
        let quantile = |q: f64| -> f64 {
            if latencies.is_empty() {
                return 0.0;
            }
            let index = ((latencies.len() as f64 - 1.0) * q).round() as usize;
            latencies[index.min(latencies.len() - 1)].as_secs_f64() * 1e6
        };
        Stats {
            calls: latencies.len(),
            errors,
            p50_us: quantile(0.50),
            p99_us: quantile(0.99),
            max_us: quantile(1.0),
            throughput_per_s: latencies.len() as f64 / wall.as_secs_f64().max(1e-9),
        }
    }
}

/// The median and the 99th percentile of `samples` (NaN, written as `null`, when there are
/// none).
pub(crate) fn percentiles(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| {
        samples
            .get(((samples.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    (at(0.5), at(0.99))
}
