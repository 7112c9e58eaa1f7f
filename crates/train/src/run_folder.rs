//! Owning a run folder: [`RunFolderLock`], an exclusive advisory lock held for the whole run
//! and naming its holder; what counts as another run in a folder; and the previous run an
//! overwrite sets aside until the new run's first checkpoint.

use std::fmt;
use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::checkpoint::{CHECKPOINTS_FOLDER, latest_checkpoint};
use crate::{RunFile, TrainError};

/// The lock file inside a run folder. It stays after the run (removing it would let a process
/// that opened it before the removal lock a file nobody else sees).
const LOCK_FILE: &str = ".lock";

/// Where an overwrite keeps the previous run until the new run's first checkpoint.
const PREVIOUS_RUN_FOLDER: &str = ".previous-run";

/// Who holds a run folder: written into its lock file by the holder, read by whoever is
/// refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunFolderOwner {
    /// The holder's process id.
    pub process_id: u32,
    /// The holder's host name.
    pub host: String,
    /// When it took the lock, in seconds since the Unix epoch.
    pub since_unix_seconds: u64,
}

impl RunFolderOwner {
    fn this_process() -> Self {
        RunFolderOwner {
            process_id: std::process::id(),
            host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|name| name.trim().to_string())
                .unwrap_or_else(|_| "an unknown host".to_string()),
            since_unix_seconds: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_secs()),
        }
    }
}

impl fmt::Display for RunFolderOwner {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "process {} on {}, since Unix time {}",
            self.process_id, self.host, self.since_unix_seconds
        )
    }
}

/// An exclusive lock on a run folder, held until dropped (or until the process ends, however
/// it ends: the operating system releases it). Uses the standard library's advisory file locks
/// (`flock` on Linux) on `RUN/.lock`, which also records the holder.
#[derive(Debug)]
pub struct RunFolderLock {
    _file: File,
    path: PathBuf,
}

impl RunFolderLock {
    /// Creates `run_folder` if needed and locks it.
    ///
    /// # Errors
    ///
    /// [`TrainError::RunFolderLocked`] naming the holder when another process (or another
    /// lock in this one) holds it; [`TrainError::Io`] when the folder or its lock file cannot
    /// be made.
    pub fn acquire(run_folder: &Path) -> Result<Self, TrainError> {
        if run_folder.exists() && !run_folder.is_dir() {
            return Err(TrainError::InvalidConfig {
                setting: "run folder",
                message: format!("{} exists and is not a folder", run_folder.display()),
            });
        }
        std::fs::create_dir_all(run_folder).map_err(|error| TrainError::io(run_folder, error))?;
        let path = run_folder.join(LOCK_FILE);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|error| TrainError::io(&path, error))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(TrainError::RunFolderLocked {
                    folder: run_folder.to_path_buf(),
                    holder: read_holder(&mut file),
                });
            }
            Err(TryLockError::Error(error)) => return Err(TrainError::io(&path, error)),
        }
        let owner = serde_json::to_vec(&RunFolderOwner::this_process())
            .expect("a RunFolderOwner serializes");
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(&owner))
            .and_then(|()| file.flush())
            .map_err(|error| TrainError::io(&path, error))?;
        Ok(RunFolderLock { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The holder a lock file names, or why it names none.
fn read_holder(file: &mut File) -> String {
    let mut text = String::new();
    if file.read_to_string(&mut text).is_err() {
        return "a process whose lock file cannot be read".to_string();
    }
    match serde_json::from_str::<RunFolderOwner>(&text) {
        Ok(owner) => owner.to_string(),
        Err(_) => "a process that has not yet written its name".to_string(),
    }
}

/// The entries of `run_folder` that belong to a run (its files and `checkpoints/`), by name.
pub(crate) fn run_entries(run_folder: &Path) -> Vec<String> {
    let files = RunFile::ALL.iter().map(|file| file.file_name());
    files
        .chain(std::iter::once(CHECKPOINTS_FOLDER))
        .filter(|name| run_folder.join(name).exists())
        .map(str::to_string)
        .collect()
}

/// A previous run an overwrite moved into `RUN/.previous-run/`: restored if the new run fails
/// before its first checkpoint, removed once that checkpoint exists.
#[derive(Debug)]
pub(crate) struct PreviousRun {
    run_folder: PathBuf,
    entries: Vec<String>,
}

impl PreviousRun {
    fn folder(run_folder: &Path) -> PathBuf {
        run_folder.join(PREVIOUS_RUN_FOLDER)
    }

    /// Moves the run entries of `run_folder` aside; `None` when there are none.
    pub(crate) fn set_aside(run_folder: &Path) -> Result<Option<Self>, TrainError> {
        let entries = run_entries(run_folder);
        if entries.is_empty() {
            return Ok(None);
        }
        let aside = Self::folder(run_folder);
        std::fs::create_dir(&aside).map_err(|error| TrainError::io(&aside, error))?;
        for name in &entries {
            let from = run_folder.join(name);
            std::fs::rename(&from, aside.join(name))
                .map_err(|error| TrainError::io(from, error))?;
        }
        Ok(Some(PreviousRun {
            run_folder: run_folder.to_path_buf(),
            entries,
        }))
    }

    /// Removes the previous run: the new one has a checkpoint.
    pub(crate) fn discard(self) -> Result<(), TrainError> {
        let aside = Self::folder(&self.run_folder);
        std::fs::remove_dir_all(&aside).map_err(|error| TrainError::io(aside, error))
    }

    /// Puts the previous run back in place of the new run's files.
    pub(crate) fn restore(self) -> Result<(), TrainError> {
        restore_entries(&self.run_folder, &self.entries)
    }
}

/// Settles an overwrite that a killed process left half done (`RUN/.previous-run/` still
/// there): when the new run wrote a checkpoint, the previous run is removed; otherwise the new
/// run's files are removed and the previous run is put back. Call with the folder locked.
pub(crate) fn settle_interrupted_overwrite(run_folder: &Path) -> Result<(), TrainError> {
    let aside = PreviousRun::folder(run_folder);
    if !aside.is_dir() {
        return Ok(());
    }
    if latest_checkpoint(run_folder).is_some() {
        return std::fs::remove_dir_all(&aside).map_err(|error| TrainError::io(aside, error));
    }
    let entries = run_entries(&aside);
    restore_entries(run_folder, &entries)
}

fn restore_entries(run_folder: &Path, entries: &[String]) -> Result<(), TrainError> {
    let aside = PreviousRun::folder(run_folder);
    for name in run_entries(run_folder) {
        let path = run_folder.join(&name);
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|error| TrainError::io(&path, error))?;
    }
    for name in entries {
        let from = aside.join(name);
        std::fs::rename(&from, run_folder.join(name))
            .map_err(|error| TrainError::io(from, error))?;
    }
    std::fs::remove_dir(&aside).map_err(|error| TrainError::io(aside, error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::checkpoints_folder;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_and_freed_on_drop() {
        let folder = tempfile::tempdir().unwrap();
        let run = folder.path().join("run");
        let first = RunFolderLock::acquire(&run).unwrap();
        let error = RunFolderLock::acquire(&run).unwrap_err();
        match &error {
            TrainError::RunFolderLocked { folder, holder } => {
                assert_eq!(folder, &run);
                assert!(
                    holder.contains(&format!("process {}", std::process::id())),
                    "{holder}"
                );
            }
            other => panic!("expected RunFolderLocked, got {other:?}"),
        }
        assert_eq!(first.path(), run.join(LOCK_FILE));
        drop(first);
        RunFolderLock::acquire(&run).unwrap();
        let file = folder.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let error = RunFolderLock::acquire(&file).unwrap_err();
        assert!(error.to_string().contains("is not a folder"), "{error}");
    }

    #[test]
    fn run_entries_name_the_run_files_and_checkpoints_only() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("notes.txt"), "mine").unwrap();
        std::fs::write(folder.path().join(LOCK_FILE), "").unwrap();
        assert!(run_entries(folder.path()).is_empty());
        std::fs::write(RunFile::Config.path_in(folder.path()), "{}").unwrap();
        std::fs::create_dir(checkpoints_folder(folder.path())).unwrap();
        assert_eq!(run_entries(folder.path()), ["config.json", "checkpoints"]);
    }

    #[test]
    fn a_previous_run_set_aside_is_restored_or_discarded() {
        let folder = tempfile::tempdir().unwrap();
        let run = folder.path();
        std::fs::write(RunFile::Config.path_in(run), "old").unwrap();
        let previous = PreviousRun::set_aside(run).unwrap().unwrap();
        assert!(!RunFile::Config.path_in(run).exists());
        std::fs::write(RunFile::Config.path_in(run), "new").unwrap();
        std::fs::write(RunFile::StepMetrics.path_in(run), "new").unwrap();
        previous.restore().unwrap();
        assert_eq!(
            std::fs::read_to_string(RunFile::Config.path_in(run)).unwrap(),
            "old"
        );
        assert!(!RunFile::StepMetrics.path_in(run).exists());
        assert!(!run.join(PREVIOUS_RUN_FOLDER).exists());

        let previous = PreviousRun::set_aside(run).unwrap().unwrap();
        previous.discard().unwrap();
        assert!(run_entries(run).is_empty() && !run.join(PREVIOUS_RUN_FOLDER).exists());
        assert!(PreviousRun::set_aside(run).unwrap().is_none());
    }

    #[test]
    fn an_overwrite_killed_before_its_first_checkpoint_is_undone() {
        let folder = tempfile::tempdir().unwrap();
        let run = folder.path();
        std::fs::write(RunFile::Config.path_in(run), "old").unwrap();
        // What a process killed after setting the old run aside leaves.
        std::mem::forget(PreviousRun::set_aside(run).unwrap());
        std::fs::write(RunFile::Config.path_in(run), "new").unwrap();
        settle_interrupted_overwrite(run).unwrap();
        assert_eq!(
            std::fs::read_to_string(RunFile::Config.path_in(run)).unwrap(),
            "old"
        );
        assert!(!run.join(PREVIOUS_RUN_FOLDER).exists());
    }
}
