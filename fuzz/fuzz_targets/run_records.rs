//! Arbitrary bytes as a run folder's JSON-lines records (`metrics.jsonl`, `steps.jsonl`,
//! `memory.jsonl`) and its JSON files (`release.json`, `phases.json`): parsed or refused with
//! a typed error naming the line, never a panic.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use reclaim_records::{
    EpochMetrics, PhaseSeconds, ReleaseReport, StepMetrics, TimelineSample, parse_json_lines,
};

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.jsonl");
    let _ = parse_json_lines::<EpochMetrics>(path, data);
    let _ = parse_json_lines::<StepMetrics>(path, data);
    let _ = parse_json_lines::<TimelineSample>(path, data);
    let _ = serde_json::from_slice::<ReleaseReport>(data);
    let _ = serde_json::from_slice::<PhaseSeconds>(data);
});
