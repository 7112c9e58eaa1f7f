//! [`ProgressDisplay`]: whether a long operation draws a progress bar, and the bar itself.
//!
//! One home for the workspace: downloading (`fetch`) and training (`reclaim-train`) both draw
//! indicatif bars. This crate is the bottom of the layers, so the type lives here and the
//! trainer takes it from here; the bar is behind the `progress` feature (indicatif), the type
//! is not, and with the `serde` feature it (de)serializes as `"Bar"` / `"Hidden"`.

/// Whether a long operation (a download, an epoch) draws a progress bar on standard error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ProgressDisplay {
    /// Draw a bar (indicatif hides it when standard error is not a terminal).
    #[default]
    Bar,
    /// Draw nothing.
    Hidden,
}

#[cfg(feature = "progress")]
impl ProgressDisplay {
    /// A bar of `length` units (`None`: unknown) drawn on standard error with `template`
    /// (indicatif's template syntax) and `=> ` as its fill; a hidden bar for
    /// [`ProgressDisplay::Hidden`]. A template that does not parse keeps indicatif's default
    /// style: a progress bar is never a reason to fail.
    pub fn progress_bar(self, length: Option<u64>, template: &str) -> indicatif::ProgressBar {
        let bar = match self {
            ProgressDisplay::Bar => indicatif::ProgressBar::with_draw_target(
                length,
                indicatif::ProgressDrawTarget::stderr(),
            ),
            ProgressDisplay::Hidden => indicatif::ProgressBar::hidden(),
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    }
}

#[cfg(all(test, feature = "progress"))]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_bar_counts_but_draws_nothing() {
        let bar = ProgressDisplay::Hidden.progress_bar(Some(10), "{pos}/{len}");
        bar.inc(3);
        assert_eq!(bar.position(), 3);
        assert!(bar.is_hidden());
    }

    #[test]
    fn a_bad_template_keeps_the_default_style() {
        let bar = ProgressDisplay::Bar.progress_bar(Some(4), "{unclosed");
        bar.inc(1);
        assert_eq!((bar.position(), bar.length()), (1, Some(4)));
        assert_eq!(ProgressDisplay::default(), ProgressDisplay::Bar);
    }
}
