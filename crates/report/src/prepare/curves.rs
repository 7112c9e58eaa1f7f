//! The training curves' data: the logged loss and its moving average per step, the epochs'
//! boundaries, and the test accuracy per epoch.

use reclaim_records::{EpochMetrics, StepMetrics};

/// Weight of the past in the smoothed loss (an exponential moving average, bias-corrected).
pub(crate) const LOSS_SMOOTHING: f64 = 0.8;

/// Where one epoch gives way to the next on the loss panel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct EpochBoundary {
    /// The epoch that starts here.
    pub(crate) epoch: usize,
    /// The last logged step of the epoch before it.
    pub(crate) after_step: f64,
}

/// Everything the training-curves figure shows, records whose values are not finite numbers
/// left out.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TrainingCurves {
    /// `(step, loss)` of each logged step.
    pub(crate) logged_loss: Vec<(f64, f64)>,
    /// `(step, smoothed loss)`: the moving average of `logged_loss`, one point each.
    pub(crate) smoothed_loss: Vec<(f64, f64)>,
    /// The boundaries between epochs, in step order.
    pub(crate) epoch_boundaries: Vec<EpochBoundary>,
    /// `(epoch, test accuracy in percent)` after each epoch.
    pub(crate) accuracy: Vec<(f64, f64)>,
}

impl TrainingCurves {
    /// Prepares the curves from the records of `steps.jsonl` and `metrics.jsonl`.
    pub(crate) fn from_records(steps: &[StepMetrics], epochs: &[EpochMetrics]) -> Self {
        let logged_loss: Vec<(f64, f64)> = steps
            .iter()
            .filter(|record| record.loss.is_finite())
            .map(|record| (record.step as f64, record.loss))
            .collect();
        let losses: Vec<f64> = logged_loss.iter().map(|&(_, loss)| loss).collect();
        let smoothed_loss = logged_loss
            .iter()
            .zip(exponential_moving_average(&losses, LOSS_SMOOTHING))
            .map(|(&(step, _), average)| (step, average))
            .collect();
        // After the last step of every epoch but the last.
        let epoch_boundaries = steps
            .windows(2)
            .filter(|pair| pair[1].epoch != pair[0].epoch)
            .map(|pair| EpochBoundary {
                epoch: pair[1].epoch,
                after_step: pair[0].step as f64,
            })
            .collect();
        let accuracy = epochs
            .iter()
            .filter(|record| record.test_accuracy.is_finite())
            .map(|record| (record.epoch as f64, record.test_accuracy * 100.0))
            .collect();
        TrainingCurves {
            logged_loss,
            smoothed_loss,
            epoch_boundaries,
            accuracy,
        }
    }
}

/// The exponential moving average of `values` with weight `smoothing` on the past,
/// bias-corrected (so the first value is kept as is), one output per input.
fn exponential_moving_average(values: &[f64], smoothing: f64) -> Vec<f64> {
    let mut average = 0.0;
    let mut weight = 0.0;
    values
        .iter()
        .map(|value| {
            average = smoothing * average + (1.0 - smoothing) * value;
            weight = smoothing * weight + (1.0 - smoothing);
            average / weight
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(step: usize, epoch: usize, loss: f64) -> StepMetrics {
        StepMetrics { step, epoch, loss }
    }

    fn epoch(epoch: usize, test_accuracy: f64) -> EpochMetrics {
        EpochMetrics {
            epoch,
            train_loss: 0.5,
            test_loss: 0.4,
            test_accuracy,
            train_seconds: 1.0,
            evaluation_seconds: 0.1,
            samples_per_second: 100.0,
            resident_bytes: None,
            device_bytes_in_use: None,
        }
    }

    #[test]
    fn the_moving_average_keeps_the_first_value_and_follows_a_constant() {
        let averaged = exponential_moving_average(&[2.0, 2.0, 2.0], 0.8);
        assert_eq!(averaged.len(), 3);
        assert!(
            averaged.iter().all(|value| (value - 2.0).abs() < 1e-12),
            "{averaged:?}"
        );
        let averaged = exponential_moving_average(&[1.0, 0.0], 0.5);
        assert!((averaged[0] - 1.0).abs() < 1e-12);
        // (0.5 * 0.5 * 1 + 0.5 * 0) / (1 - 0.25) = 1/3
        assert!((averaged[1] - 1.0 / 3.0).abs() < 1e-12, "{averaged:?}");
    }

    #[test]
    fn curves_leave_out_values_that_are_not_numbers_and_mark_each_new_epoch() {
        let steps = [
            step(10, 1, 2.0),
            step(20, 1, f64::NAN),
            step(30, 2, 1.0),
            step(40, 3, 0.5),
        ];
        let epochs = [epoch(1, 0.5), epoch(2, f64::INFINITY), epoch(3, 0.9731)];
        let curves = TrainingCurves::from_records(&steps, &epochs);
        assert_eq!(curves.logged_loss, [(10.0, 2.0), (30.0, 1.0), (40.0, 0.5)]);
        assert_eq!(curves.smoothed_loss.len(), 3);
        assert_eq!(curves.smoothed_loss[0], (10.0, 2.0));
        assert!(curves.smoothed_loss[1].1 > 1.0 && curves.smoothed_loss[1].1 < 2.0);
        assert_eq!(
            curves.epoch_boundaries,
            [
                EpochBoundary {
                    epoch: 2,
                    after_step: 20.0
                },
                EpochBoundary {
                    epoch: 3,
                    after_step: 30.0
                },
            ]
        );
        assert_eq!(curves.accuracy.len(), 2);
        assert_eq!(curves.accuracy[0], (1.0, 50.0));
        assert!((curves.accuracy[1].1 - 97.31).abs() < 1e-9);
    }

    #[test]
    fn no_records_make_empty_curves() {
        let curves = TrainingCurves::from_records(&[], &[]);
        assert!(curves.logged_loss.is_empty() && curves.smoothed_loss.is_empty());
        assert!(curves.epoch_boundaries.is_empty() && curves.accuracy.is_empty());
    }
}
