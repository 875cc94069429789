//! Bringing users' data in: MySQL's `LOAD DATA LOCAL INFILE` (the client sends a delimited
//! text file), `COPY INTO` (Parquet, CSV or NDJSON files on object storage the server's
//! configuration names) and `read_parquet()` (those Parquet files as a table to select from). Either way the rows are read as the table's types and committed in one
//! snapshot, or not at all.

pub mod copy_files;
pub mod copy_into;
pub mod delimited;
pub mod fitted_batch;
pub mod load_data;
pub mod local_load;
pub mod object_file;
pub mod read_parquet;
pub mod text_file;
pub mod text_rows;
pub mod words;
