//! [`SplitLinesRenderer`]: burn-train's progress, one line per split rather than per batch.

use burn_train::logger::{EvaluationProgressLogger, TrainingProgressLogger};
use burn_train::metric::MetricDefinition;
use burn_train::renderer::{
    EvaluationName, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining,
};

/// A burn-train renderer that prints a line when a split starts and the summary at the end.
///
/// burn-train's own renderer without its `tui` feature prints every batch's progress (some
/// 1,100 lines per MNIST epoch); [`classification_training`](crate::classification_training)
/// uses this one instead.
#[derive(Debug, Default)]
pub struct SplitLinesRenderer {
    total_epochs: usize,
    epoch: usize,
}

impl MetricsRendererTraining for SplitLinesRenderer {
    fn update_train(&mut self, _state: MetricState) {}

    fn update_valid(&mut self, _state: MetricState) {}
}

impl MetricsRendererEvaluation for SplitLinesRenderer {
    fn update_test(&mut self, _name: EvaluationName, _state: MetricState) {}
}

impl TrainingProgressLogger for SplitLinesRenderer {
    fn start(
        &mut self,
        total_epochs: usize,
        starting_epoch: usize,
        _total_items: Option<usize>,
        _label: Option<&str>,
    ) {
        self.total_epochs = total_epochs;
        self.epoch = starting_epoch.saturating_sub(1);
    }

    fn update_epoch(&mut self, _epoch: usize) {}

    fn start_split(&mut self, split: &str, total_items: usize) {
        // An epoch starts with its training split (burn-train does not always call
        // `update_epoch`).
        if split == "train" {
            self.epoch += 1;
        }
        println!(
            "epoch {}/{}: {split}, {total_items} items",
            self.epoch, self.total_epochs
        );
    }

    fn update_split(&mut self, _items_processed: usize) {}

    fn end_split(&mut self) {}

    fn end(&mut self) {}

    fn log_event_training(&mut self, _event: String) {}
}

impl EvaluationProgressLogger for SplitLinesRenderer {
    fn start_global_progress(&mut self, _total_tests: usize) {}

    fn start_test(&mut self, name: &str, total_items: usize) {
        println!("test {name}: {total_items} items");
    }

    fn update_test_progress(&mut self, _items_processed: usize) {}

    fn end_test(&mut self) {}

    fn end_global_progress(&mut self) {}

    fn log_event_evaluation(&mut self, _event: String) {}
}

impl MetricsRenderer for SplitLinesRenderer {
    fn manual_close(&mut self) {}

    fn register_metric(&mut self, _definition: MetricDefinition) {}
}
