//! Release by construction: keeping a batch, an epoch or a loader past its owner does not
//! compile. Each case's expected compiler output is checked in beside it (`tests/ui/*.stderr`).

#[test]
fn borrows_outliving_their_owner_do_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
