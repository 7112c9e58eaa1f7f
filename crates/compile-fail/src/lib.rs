//! Compile-fail tests of `reclaim-loader`'s lifetime guarantees; the crate has no code of its
//! own. Each case in `tests/ui/` keeps a borrow past its owner (a dataset's view past the
//! dataset, a batch past its epoch or on a thread that may outlive it, an epoch past its loader,
//! a loader past its dataset) and must be refused with the compiler's message checked in beside
//! it; `tests/every_borrow_within_its_owner.rs` is the control, the same values used within
//! their owners' lives, which must compile and run.
//!
//! A package of its own because trybuild builds the tested package's dev-dependencies: kept
//! beside the loader, its cases would build every Burn backend the loader's tests use.
//!
//! The crate has no API, so it has no example: its cases are the examples, of what must not
//! compile. They run with the workspace's tests.
