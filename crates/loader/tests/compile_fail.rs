//! Release by construction: keeping a dataset's image, a batch (through the epoch, its iterator
//! or another thread), an epoch or a loader past its owner does not compile. Each case's expected
//! compiler output is checked in beside it (`tests/ui/*.stderr`); the control case
//! (`tests/ui/pass/`), the same values each used within its owner's life, must compile and run,
//! so that a case failing for an unrelated reason (a renamed item) does not pass unnoticed.

#[test]
fn borrows_outliving_their_owner_do_not_compile_and_borrows_within_do() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
