//! [`TrainRun::summary`]: what a finished run did, as text for people.

use std::fmt::Write as _;

use indicatif::HumanBytes;
use reclaim_records::epoch_table;

use crate::{RunFile, StepKernel, TrainRun};

impl TrainRun {
    /// What a run did, for people: a line per epoch, the release table, what the live heap kept,
    /// and a last line `test accuracy 89.42%`.
    pub fn summary(&self) -> String {
        let run = self;
        let mut text = epoch_table(&run.epochs);
        let _ = writeln!(
            text,
            "\nrelease report ({}):",
            RunFile::ReleaseTable.path_in(&run.run_folder).display()
        );
        text.push_str(&run.release.to_markdown());
        if let Some(left_over) = run.release.heap_bytes_left_over() {
            let sign = if left_over < 0 { "-" } else { "+" };
            let _ = writeln!(
                text,
                "live heap after release vs before loading: {sign}{}",
                HumanBytes(left_over.unsigned_abs())
            );
        }
        let _ = writeln!(
            text,
            "peak loader memory {}, whole job {:.2} s, run folder {}",
            HumanBytes(run.peak_loader_bytes),
            run.phases.total,
            run.run_folder.display()
        );
        let _ = writeln!(text, "time by phase: {}", run.phases);
        let _ = writeln!(
            text,
            "training step: {}",
            step_kernel_description(run.step_kernel)
        );
        if let Some(obstacle) = run.step_kernel_obstacle {
            let _ = writeln!(
                text,
                "(the step asked for with --step does not apply: {obstacle})"
            );
        }
        if let Some(accuracy) = run.final_test_accuracy() {
            let _ = writeln!(text, "test accuracy {:.2}%", accuracy * 100.0);
        }
        text
    }
}

/// What a run's training step did, for its summary; the other step named with the option that
/// asks for it.
fn step_kernel_description(kernel: StepKernel) -> &'static str {
    match kernel {
        StepKernel::Fused => {
            "fused on the host, from the non-zero pixels (--step dense for Burn's autodiff step)"
        }
        StepKernel::Dense => "Burn's autodiff and optimizer",
    }
}

#[cfg(test)]
mod tests {
    use reclaim_memory::MemorySnapshot;

    use super::*;
    use crate::{EpochMetrics, PhaseSeconds, ReleaseReport, ReleaseStage, StepKernelObstacle};

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
    fn the_summary_shows_epochs_release_and_heap_and_ends_with_the_test_accuracy() {
        let heap = |bytes: u64| MemorySnapshot {
            live_heap_bytes: Some(bytes),
            ..MemorySnapshot::default()
        };
        let mut release = ReleaseReport::default();
        release.record(ReleaseStage::BeforeLoading, heap(10 * 1024 * 1024));
        release.record(ReleaseStage::ModelDropped, heap(10 * 1024 * 1024 - 2048));
        let run = TrainRun {
            epochs: vec![epoch(1, 0.8512), epoch(2, 0.8942)],
            final_weights_path: "runs/example/model.bpk".into(),
            release,
            phases: PhaseSeconds {
                training: 10.0,
                figures: Some(0.5),
                total: 12.5,
                ..PhaseSeconds::default()
            },
            peak_loader_bytes: 3 * 1024 * 1024 / 2,
            run_folder: "runs/example".into(),
            step_kernel: StepKernel::Fused,
            step_kernel_obstacle: None,
        };
        let summary = run.summary();
        assert!(summary.starts_with("epoch  train loss"), "{summary}");
        assert!(summary.contains("85.12%") && summary.contains("| model dropped |"));
        assert!(
            summary.contains("release report (runs/example/release.md):"),
            "{summary}"
        );
        assert!(
            summary.contains("live heap after release vs before loading: -2.00 KiB\n"),
            "{summary}"
        );
        assert!(
            summary.contains(
                "peak loader memory 1.50 MiB, whole job 12.50 s, run folder runs/example\n"
            ),
            "{summary}"
        );
        assert!(
            summary.contains("time by phase: start-up 0.000 s · ")
                && summary.contains("training 10.000 s · ")
                && summary.contains("figures 0.500 s · other 2.000 s · total 12.500 s\n"),
            "{summary}"
        );
        let accuracy = run.final_test_accuracy().unwrap();
        assert!(summary.ends_with(&format!("test accuracy {:.2}%\n", accuracy * 100.0)));
        assert!(summary.ends_with("test accuracy 89.42%\n"), "{summary}");
        assert!(
            summary.contains("training step: fused on the host, from the non-zero pixels"),
            "{summary}"
        );
        assert!(!summary.contains("does not apply"), "{summary}");
        let dense = (TrainRun {
            step_kernel: StepKernel::Dense,
            step_kernel_obstacle: Some(StepKernelObstacle::FlexBatchAboveLimit {
                batch_size: 1000,
            }),
            ..run
        })
        .summary();
        assert!(
            dense.contains(
                "training step: Burn's autodiff and optimizer\n(the step asked for with --step \
                 does not apply: batch 1000 is above 768 on flex)\n"
            ),
            "{dense}"
        );
    }
}
