//! The environment variables RECLAIM_DATA and RECLAIM_MIRROR.
//!
//! One test function in its own test binary (its own process): it changes the environment, which
//! must not race with other threads reading it.

use reclaim_dataset::{
    Family,
    catalogue::{DATA_FOLDER_VARIABLE, workspace_data_folder},
    default_data_folder,
};

#[test]
fn environment_variables_are_honoured_in_order() {
    let root = tempfile::tempdir().unwrap();
    let argument = tempfile::tempdir().unwrap();

    // SAFETY: this test binary runs this single test, so no other thread reads the environment.
    unsafe { std::env::remove_var(DATA_FOLDER_VARIABLE) };
    assert_eq!(
        default_data_folder(None, Family::Mnist),
        workspace_data_folder().join("mnist"),
        "without configuration: the workspace's data/mnist"
    );

    // SAFETY: as above.
    unsafe { std::env::set_var(DATA_FOLDER_VARIABLE, root.path()) };
    assert_eq!(
        default_data_folder(None, Family::FashionMnist),
        root.path().join("fashion-mnist"),
        "RECLAIM_DATA is used when no argument is given"
    );
    assert_eq!(
        default_data_folder(Some(argument.path()), Family::FashionMnist),
        argument.path().join("fashion-mnist"),
        "the argument wins over RECLAIM_DATA"
    );

    // SAFETY: as above.
    unsafe { std::env::set_var(DATA_FOLDER_VARIABLE, "") };
    assert_eq!(
        default_data_folder(None, Family::Mnist),
        workspace_data_folder().join("mnist"),
        "an empty RECLAIM_DATA counts as unset"
    );

    #[cfg(feature = "fetch")]
    {
        use reclaim_dataset::fetch::{FetchOptions, MIRROR_VARIABLE, Mirror};
        // SAFETY: as above.
        unsafe { std::env::set_var(MIRROR_VARIABLE, "file:///srv/mnist-mirror") };
        let options = FetchOptions::for_family(Family::Mnist, None).unwrap();
        assert_eq!(
            options.mirrors[0],
            Mirror::Folder("/srv/mnist-mirror".into())
        );
        assert_eq!(options.mirrors.len(), 1 + Family::Mnist.mirrors().len());
        let options = FetchOptions::for_family(Family::Mnist, Some("/from/argument")).unwrap();
        assert_eq!(options.mirrors[0], Mirror::Folder("/from/argument".into()));
        assert_eq!(options.mirrors.len(), 1 + Family::Mnist.mirrors().len());
        // SAFETY: as above.
        unsafe { std::env::remove_var(MIRROR_VARIABLE) };
        let options = FetchOptions::for_family(Family::Mnist, None).unwrap();
        assert_eq!(options.mirrors.len(), Family::Mnist.mirrors().len());
        assert_eq!(
            options.mirrors[0],
            Mirror::Http(Family::Mnist.mirrors()[0].into())
        );
    }
}
