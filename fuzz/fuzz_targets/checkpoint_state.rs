//! Arbitrary bytes as a checkpoint's `checkpoint.json` (reclaim-train's `CheckpointState`: the epoch
//! and step, the loader's state, the run's identity with its dataset fingerprint, the partial
//! epoch's sums): parsed or refused with a typed error, never a panic; an accepted state
//! serializes again and reads back equal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reclaim_train::CheckpointState;

fuzz_target!(|data: &[u8]| {
    let Ok(state) = serde_json::from_slice::<CheckpointState>(data) else {
        return;
    };
    let written = serde_json::to_vec(&state).expect("a parsed state serializes");
    let again: CheckpointState = serde_json::from_slice(&written).expect("and reads back");
    // Floats written as text ("NaN") compare unequal to themselves: compare their text.
    assert_eq!(
        serde_json::to_vec(&again).expect("serializes"),
        written,
        "a state reads back as it was written"
    );
});
