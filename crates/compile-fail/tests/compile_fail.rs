//! Release by construction: keeping a dataset's image, a batch (through the epoch, its iterator
//! or another thread), an epoch or a loader past its owner does not compile. Each case's expected
//! compiler output is checked in beside it (`tests/ui/*.stderr`). The control case, the same
//! values each used within its owner's life, is `tests/every_borrow_within_its_owner.rs`: it must
//! compile and run, so that the API these cases use cannot change (an item renamed) without a
//! test failing for it.

#[test]
fn borrows_outliving_their_owner_do_not_compile() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
