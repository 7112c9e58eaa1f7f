//! Text for people: the epochs as a table (defined in reclaim-records, beside the records it
//! prints, so that the trainer's summary and `reclaim report` print the same table).

pub use reclaim_records::epoch_table;
