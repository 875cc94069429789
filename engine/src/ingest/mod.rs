//! Bringing users' data in: MySQL's `LOAD DATA LOCAL INFILE` (the client sends a delimited
//! text file, which is cut into records, read as the table's types and committed in one
//! snapshot, or not at all).

pub mod delimited;
pub mod load_data;
pub mod local_load;
pub mod text_rows;
