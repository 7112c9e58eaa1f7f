//! The memory timeline of a run: a light background sampler plus a sample at each phase
//! boundary, streamed to `memory.jsonl` as they are taken.
//!
//! Samples go straight to a buffered file rather than into a growing `Vec`, so the
//! measurement itself holds a constant amount of heap: the timeline can then show the release
//! giving back every byte the run took, without its own records in the way.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use burn::tensor::Device;
use reclaim_memory::MemorySnapshot;
use reclaim_records::TimelineSample;

use crate::TrainError;

struct Shared {
    started: Instant,
    watched_folder: PathBuf,
    output_path: PathBuf,
    output: Mutex<Option<BufWriter<File>>>,
    write_error: Mutex<Option<std::io::Error>>,
    stop: AtomicBool,
}

impl Shared {
    fn sample(&self, device: Option<&Device>, phase: Option<Cow<'static, str>>) -> MemorySnapshot {
        let mut output = self.output.lock().expect("timeline lock");
        if phase.is_some() {
            // A phase boundary: let the process settle first (the sampler cannot allocate
            // meanwhile, it waits for the lock held here).
            reclaim_memory::wait_for_settled_process();
        }
        let mut memory = MemorySnapshot::take_under(device, &self.watched_folder);
        memory.seconds = self.started.elapsed().as_secs_f64();
        if let Some(writer) = output.as_mut() {
            let sample = TimelineSample { memory, phase };
            let written = serde_json::to_writer(&mut *writer, &sample)
                .map_err(std::io::Error::from)
                .and_then(|()| writer.write_all(b"\n"))
                // Flushed line by line: a killed run leaves every sample taken before the kill.
                .and_then(|()| writer.flush());
            if let Err(error) = written {
                *output = None;
                *self.write_error.lock().expect("timeline lock") = Some(error);
            }
        }
        memory
    }
}

/// Samples the process's memory every `interval` on a background thread, and on demand at
/// phase boundaries (where the device's pool is read too), streaming each sample to a JSON
/// lines file. The thread is joined on [`MemoryTimeline::finish`] or on drop.
pub struct MemoryTimeline {
    shared: Arc<Shared>,
    sampler: Option<JoinHandle<()>>,
}

impl MemoryTimeline {
    /// Starts sampling now into `output_path`; mappings of files under `watched_folder` count
    /// as dataset bytes.
    pub fn start(
        interval: Duration,
        output_path: &Path,
        watched_folder: &Path,
    ) -> Result<Self, TrainError> {
        let file = File::create(output_path).map_err(|error| TrainError::io(output_path, error))?;
        let shared = Arc::new(Shared {
            started: Instant::now(),
            watched_folder: watched_folder
                .canonicalize()
                .unwrap_or_else(|_| watched_folder.to_path_buf()),
            output_path: output_path.to_path_buf(),
            output: Mutex::new(Some(BufWriter::with_capacity(64 * 1024, file))),
            write_error: Mutex::new(None),
            stop: AtomicBool::new(false),
        });
        let sampler_shared = Arc::clone(&shared);
        let sampler = std::thread::Builder::new()
            .name("reclaim-memory-sampler".into())
            .spawn(move || {
                while !sampler_shared.stop.load(Ordering::Relaxed) {
                    sampler_shared.sample(None, None);
                    std::thread::park_timeout(interval);
                }
            })
            .map_err(|error| TrainError::io(output_path, error))?;
        Ok(MemoryTimeline {
            shared,
            sampler: Some(sampler),
        })
    }

    /// Records a phase boundary, reading the device's pool as well. Returns the sample.
    pub fn mark(
        &self,
        phase: impl Into<Cow<'static, str>>,
        device: Option<&Device>,
    ) -> MemorySnapshot {
        self.shared.sample(device, Some(phase.into()))
    }

    /// Stops the sampler, joins it and flushes the file.
    pub fn finish(mut self) -> Result<(), TrainError> {
        self.stop_sampler();
        let path = &self.shared.output_path;
        if let Some(error) = self
            .shared
            .write_error
            .lock()
            .expect("timeline lock")
            .take()
        {
            return Err(TrainError::io(path, error));
        }
        let writer = self.shared.output.lock().expect("timeline lock").take();
        if let Some(writer) = writer {
            let file = writer
                .into_inner()
                .map_err(|error| TrainError::io(path, error.into_error()))?;
            file.sync_all()
                .map_err(|error| TrainError::io(path, error))?;
        }
        Ok(())
    }

    fn stop_sampler(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(sampler) = self.sampler.take() {
            sampler.thread().unpark();
            let _ = sampler.join();
        }
    }
}

impl Drop for MemoryTimeline {
    fn drop(&mut self) {
        self.stop_sampler();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read_json_lines;

    #[test]
    fn periodic_samples_and_marks_are_streamed_in_time_order() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("memory.jsonl");
        let timeline =
            MemoryTimeline::start(Duration::from_millis(2), &path, folder.path()).unwrap();
        timeline.mark("start", None);
        std::thread::sleep(Duration::from_millis(30));
        let allocation = vec![1u8; 64 << 20];
        let allocated = timeline.mark(format!("allocated {}", allocation.len()), None);
        drop(allocation);
        timeline.mark("freed", None);
        timeline.finish().unwrap();
        assert!(allocated.resident_bytes.unwrap() > 0);

        let samples: Vec<TimelineSample> = read_json_lines(&path).unwrap();
        let phases: Vec<_> = samples
            .iter()
            .filter_map(|sample| sample.phase.as_deref())
            .collect();
        assert_eq!(phases, ["start", "allocated 67108864", "freed"]);
        assert!(
            samples
                .iter()
                .filter(|sample| sample.phase.is_none())
                .count()
                >= 3
        );
        assert!(
            samples
                .windows(2)
                .all(|pair| pair[0].memory.seconds <= pair[1].memory.seconds)
        );
    }

    #[test]
    fn an_unwritable_output_is_an_error_naming_it() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("absent").join("memory.jsonl");
        let error = MemoryTimeline::start(Duration::from_millis(5), &path, folder.path())
            .err()
            .unwrap();
        assert!(error.to_string().contains("absent"), "{error}");
    }
}
