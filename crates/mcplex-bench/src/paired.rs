//! How sure a difference between two rankings of one query set is: the paired bootstrap.
//!
//! Two rankings of the same queries differ query by query; the mean of those differences is
//! what a table shows, and on a set of 30–150 queries it moves by a few hundredths when other
//! queries of the same kind are drawn. Resampling the queries with replacement, each time
//! taking both rankings' scores of the drawn query (the pairs stay together, so what the two
//! share cancels), gives the spread of that mean; the 2.5th and 97.5th percentiles of the
//! resampled means are the interval `bench retrieval` prints beside each ranking. An interval
//! that holds zero says the set cannot tell the two apart. It speaks only of the draw of
//! queries: a model trained again moves the sets by as much again (docs/search.md).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Resamples of the query set: enough that the percentiles move by well under a thousandth
/// from one seed to another.
const RESAMPLES: usize = 2000;

/// The seed of the resampling, fixed so that a report is the same on every run and machine.
const SEED: u64 = 34;

/// The mean of `other − base` over paired per-query scores, and its 95% bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    pub mean: f64,
    pub low: f64,
    pub high: f64,
}

impl Difference {
    /// `other`'s scores against `base`'s, query by query (the two in the same order). `None`
    /// when they are not pairs (different lengths) or there is nothing to pair.
    pub fn of(base: &[f64], other: &[f64]) -> Option<Difference> {
        if base.len() != other.len() || base.is_empty() {
            return None;
        }
        let differences: Vec<f64> = other.iter().zip(base).map(|(o, b)| o - b).collect();
        let n = differences.len();
        let mean = differences.iter().sum::<f64>() / n as f64;
        let mut rng = StdRng::seed_from_u64(SEED);
        let mut means: Vec<f64> = (0..RESAMPLES)
            .map(|_| {
                (0..n)
                    .map(|_| differences[rng.random_range(0..n)])
                    .sum::<f64>()
                    / n as f64
            })
            .collect();
        means.sort_by(f64::total_cmp);
        let at = |q: f64| means[((RESAMPLES - 1) as f64 * q).round() as usize];
        Some(Difference {
            mean,
            low: at(0.025),
            high: at(0.975),
        })
    }

    /// Whether the set tells the two rankings apart: the interval leaves zero out.
    pub fn separates(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_rankings_differ_by_nothing_for_sure() {
        let scores = [1.0, 0.5, 0.0, 1.0];
        let d = Difference::of(&scores, &scores).expect("pairs");
        assert_eq!((d.mean, d.low, d.high), (0.0, 0.0, 0.0));
        assert!(!d.separates());
    }

    #[test]
    fn a_gain_on_every_query_is_told_apart() {
        let base = vec![0.0; 40];
        let other = vec![0.25; 40];
        let d = Difference::of(&base, &other).expect("pairs");
        assert!((d.mean - 0.25).abs() < 1e-12);
        assert!(d.separates());
    }

    #[test]
    fn one_query_of_forty_is_not_told_apart() {
        let base = vec![0.0; 40];
        let mut other = base.clone();
        other[7] = 1.0;
        let d = Difference::of(&base, &other).expect("pairs");
        assert!((d.mean - 0.025).abs() < 1e-12);
        assert_eq!(d.low, 0.0, "most resamples miss the one query");
        assert!(d.high >= 0.05 && d.high <= 0.1, "{d:?}");
        assert!(!d.separates());
    }

    #[test]
    fn a_loss_is_below_zero_and_the_interval_holds_the_mean() {
        let base: Vec<f64> = (0..60).map(|i| f64::from(i % 3 != 0)).collect();
        let other: Vec<f64> = (0..60).map(|i| f64::from(i % 2 == 0)).collect();
        let d = Difference::of(&base, &other).expect("pairs");
        assert!(d.low <= d.mean && d.mean <= d.high, "{d:?}");
        assert!(d.mean < 0.0);
    }

    #[test]
    fn unpaired_scores_have_no_difference() {
        assert_eq!(Difference::of(&[1.0], &[1.0, 0.0]), None);
        assert_eq!(Difference::of(&[], &[]), None);
    }
}
