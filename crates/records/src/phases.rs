//! [`PhaseSeconds`]: where a run's wall-clock time went, phase by phase (`phases.json`).

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::RecordsError;
use crate::files::{RunFile, read_json_file, write_json_file};

/// The wall-clock seconds of each phase of one reclaim-train `train` call, in the order a run
/// passes them, so that a regression shows where it is. Written to `phases.json` at the end of
/// the run; `reclaim train` adds the figures it draws afterwards.
///
/// A resumed run counts only what this call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseSeconds {
    /// Everything before the dataset is opened for training, warm-up excluded: the settings
    /// and the dataset checked, the device, the run folder, its lock and `config.json`, the
    /// checkpoint to resume from, the memory baseline, the model and optimizer.
    pub start_up: f64,
    /// The warm-up steps (kernels, pools and the first allocations, before the baseline).
    pub warm_up: f64,
    /// Opening the dataset splits the run trains and evaluates on.
    pub dataset_opening: f64,
    /// The training steps of every epoch, with their loss logging and divergence checks.
    pub training: f64,
    /// The evaluation on the test split after each epoch.
    pub evaluation: f64,
    /// Writing checkpoints (each epoch's, and those within epochs).
    pub checkpoints: f64,
    /// The release, measured step by step, the final weights and the release report written.
    pub release: f64,
    /// Drawing the run's figures (SVG and PNG), where the caller drew them (`reclaim train`
    /// does; `train` itself draws none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figures: Option<f64>,
    /// The whole call, opening and release included (and the figures, where drawn).
    pub total: f64,
}

impl PhaseSeconds {
    /// The time no phase accounts for (between phases: the loader's set-up, device syncs,
    /// the end of an epoch), never negative.
    pub fn unaccounted(&self) -> f64 {
        let phases = [
            self.start_up,
            self.warm_up,
            self.dataset_opening,
            self.training,
            self.evaluation,
            self.checkpoints,
            self.release,
            self.figures.unwrap_or(0.0),
        ];
        (self.total - phases.iter().sum::<f64>()).max(0.0)
    }

    /// Adds the figures' drawing time (to the total as well).
    pub fn add_figures(&mut self, seconds: f64) {
        self.figures = Some(self.figures.unwrap_or(0.0) + seconds);
        self.total += seconds;
    }

    /// Writes `phases.json` into `folder`, atomically.
    pub fn write_to(&self, folder: &Path) -> Result<(), RecordsError> {
        write_json_file(folder, RunFile::Phases, self)
    }

    /// Reads the `phases.json` in `folder`; `None` when there is none (a run that ended before
    /// its release, or one written before phases were recorded).
    pub fn read_from(folder: &Path) -> Result<Option<Self>, RecordsError> {
        read_json_file(folder, RunFile::Phases)
    }
}

/// One line: each phase as `name seconds s` (three decimals), joined by ` · `, then
/// `total seconds s`.
impl fmt::Display for PhaseSeconds {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut phases = vec![
            ("start-up", self.start_up),
            ("warm-up", self.warm_up),
            ("dataset opening", self.dataset_opening),
            ("training", self.training),
            ("evaluation", self.evaluation),
            ("checkpoints", self.checkpoints),
            ("release", self.release),
        ];
        phases.extend(self.figures.map(|seconds| ("figures", seconds)));
        phases.push(("other", self.unaccounted()));
        for (name, seconds) in phases {
            write!(formatter, "{name} {seconds:.3} s · ")?;
        }
        write!(formatter, "total {:.3} s", self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phases() -> PhaseSeconds {
        PhaseSeconds {
            start_up: 0.25,
            warm_up: 0.125,
            dataset_opening: 0.0625,
            training: 1.0,
            evaluation: 0.25,
            checkpoints: 0.0625,
            release: 0.125,
            figures: None,
            total: 2.0,
        }
    }

    #[test]
    fn what_no_phase_accounts_for_is_the_rest_of_the_total_and_never_negative() {
        assert_eq!(phases().unaccounted(), 0.125);
        let overcounted = PhaseSeconds {
            total: 1.0,
            ..phases()
        };
        assert_eq!(overcounted.unaccounted(), 0.0);
    }

    #[test]
    fn the_figures_add_to_their_phase_and_to_the_total() {
        let mut with_figures = phases();
        with_figures.add_figures(0.5);
        assert_eq!(with_figures.figures, Some(0.5));
        assert_eq!(with_figures.total, 2.5);
        assert_eq!(with_figures.unaccounted(), 0.125);
        assert!(with_figures.to_string().contains("figures 0.500 s"));
        assert!(!phases().to_string().contains("figures"));
    }

    #[test]
    fn the_line_names_every_phase_in_order_and_ends_with_the_total() {
        let line = phases().to_string();
        let names = [
            "start-up",
            "warm-up",
            "dataset opening",
            "training",
            "evaluation",
            "checkpoints",
            "release",
            "other",
            "total",
        ];
        let positions: Vec<usize> = names
            .iter()
            .map(|name| {
                line.find(name)
                    .unwrap_or_else(|| panic!("{name} missing: {line}"))
            })
            .collect();
        assert!(positions.windows(2).all(|pair| pair[0] < pair[1]), "{line}");
        assert!(line.ends_with("total 2.000 s"), "{line}");
    }

    #[test]
    fn phases_json_round_trips_and_a_missing_file_is_none() {
        let folder = tempfile::tempdir().unwrap();
        assert_eq!(PhaseSeconds::read_from(folder.path()).unwrap(), None);
        let mut written = phases();
        written.add_figures(0.25);
        written.write_to(folder.path()).unwrap();
        assert_eq!(
            PhaseSeconds::read_from(folder.path()).unwrap(),
            Some(written)
        );
    }
}
