//! `Backend.open_reader`: the reads of `dataloader_api.io` datasets through
//! the crate `dataloader-netio` (`netio`: `NativeReader`, `NativeStream`,
//! `PendingRead`, `ReadCancel`), without the interpreter while they run. Uses
//! `interp`.

pub(crate) mod netio;
