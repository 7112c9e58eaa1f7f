//! [`epoch_table`]: a run's epochs as text, as `reclaim train` and `reclaim report` print them.

use std::fmt::Write as _;

use crate::EpochMetrics;

/// The epochs as a text table, one line each, as `reclaim train` and `reclaim report` print
/// them: losses, test accuracy, training and evaluation seconds, training samples per second.
pub fn epoch_table(epochs: &[EpochMetrics]) -> String {
    if epochs.is_empty() {
        return "no epoch completed\n".into();
    }
    let mut table =
        String::from("epoch  train loss  test loss  test accuracy  train s  eval s  samples/s\n");
    for epoch in epochs {
        let _ = writeln!(
            table,
            "{:>5}  {:>10.4}  {:>9.4}  {:>12.2}%  {:>7.2}  {:>6.2}  {:>9.0}",
            epoch.epoch,
            epoch.train_loss,
            epoch.test_loss,
            epoch.test_accuracy * 100.0,
            epoch.train_seconds,
            epoch.evaluation_seconds,
            epoch.samples_per_second
        );
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epoch(number: usize, accuracy: f64) -> EpochMetrics {
        EpochMetrics {
            epoch: number,
            train_loss: 0.5,
            test_loss: 0.25,
            test_accuracy: accuracy,
            train_seconds: 2.0,
            evaluation_seconds: 0.5,
            samples_per_second: 30000.0,
            resident_bytes: None,
            device_bytes_in_use: None,
        }
    }

    #[test]
    fn the_epoch_table_has_a_line_per_epoch() {
        let table = epoch_table(&[epoch(1, 0.9012), epoch(2, 0.9345)]);
        assert_eq!(table.lines().count(), 3, "{table}");
        assert!(
            table.contains("90.12%") && table.contains("93.45%"),
            "{table}"
        );
        assert_eq!(epoch_table(&[]), "no epoch completed\n");
    }
}
