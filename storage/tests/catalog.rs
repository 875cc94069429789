//! The catalog lives in the object store: a second process on the same storage sees it.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};
use sieve_storage::{Catalog, Storage, StorageError, TableDef, TableOptions};

fn def(db: &str, name: &str) -> TableDef {
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, true)]));
    TableDef::new(
        db,
        name,
        schema.clone(),
        TableOptions::defaults_for(&schema),
    )
    .unwrap()
}

#[tokio::test]
async fn databases_and_tables_are_shared_through_storage() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let first = Catalog::open(Storage::open(&url).unwrap()).await.unwrap();
    first.create_database("sales").await.unwrap();
    first.create_table(&def("sales", "orders")).await.unwrap();

    // A second process: its own store on the same directory.
    let second = Catalog::open(Storage::open(dir.path().to_str().unwrap()).unwrap())
        .await
        .unwrap();
    assert_eq!(
        second.list_databases().await.unwrap(),
        vec!["default", "sales"]
    );
    assert_eq!(second.list_tables("sales").await.unwrap(), vec!["orders"]);
    let orders = second.table("sales", "orders").await.unwrap();
    assert_eq!(orders.options.index_columns, vec!["a"]);

    assert!(matches!(
        second.create_database("sales").await,
        Err(StorageError::DatabaseExists(_))
    ));
    assert!(matches!(
        second.create_table(&def("sales", "orders")).await,
        Err(StorageError::TableExists(..))
    ));
    assert!(matches!(
        second.table("sales", "nope").await,
        Err(StorageError::UnknownTable(..))
    ));
    assert!(matches!(
        second.table("nope", "orders").await,
        Err(StorageError::UnknownDatabase(_))
    ));
    assert!(matches!(
        second.create_table(&def("nope", "x")).await,
        Err(StorageError::UnknownDatabase(_))
    ));
    assert!(matches!(
        second.drop_database("sales").await,
        Err(StorageError::DatabaseNotEmpty(_))
    ));

    second.drop_table("sales", "orders").await.unwrap();
    assert!(first.list_tables("sales").await.unwrap().is_empty());
    // Created again, the table gets a new id: old data can never show through.
    first.create_table(&def("sales", "orders")).await.unwrap();
    assert_ne!(first.table("sales", "orders").await.unwrap().id, orders.id);
    first.drop_table("sales", "orders").await.unwrap();
    first.drop_database("sales").await.unwrap();
    assert_eq!(first.list_databases().await.unwrap(), vec!["default"]);
}

#[test]
fn table_definitions_are_checked() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("l", DataType::new_list(DataType::Int32, true), true),
    ]));
    let defaults = TableOptions::defaults_for(&schema);
    assert_eq!(
        defaults.index_columns,
        vec!["a"],
        "nested columns are not indexed by default"
    );
    let mut bad = defaults.clone();
    bad.index_columns = vec!["missing".into()];
    assert!(
        TableDef::new("default", "t", schema.clone(), bad)
            .unwrap_err()
            .to_string()
            .contains("missing")
    );
    let mut bad = defaults.clone();
    bad.index_columns = vec!["l".into()];
    assert!(
        TableDef::new("default", "t", schema.clone(), bad)
            .unwrap_err()
            .to_string()
            .contains("cannot be indexed")
    );
    let mut bad = defaults;
    bad.block_rows = 0;
    let error = TableDef::new("default", "t", schema, bad).unwrap_err();
    assert!(error.to_string().contains("block_rows"), "{error}");
}

#[test]
fn storage_urls() {
    assert!(Storage::open("memory://").is_ok());
    let err = Storage::open("ftp://host/x").unwrap_err().to_string();
    assert!(err.contains("unsupported scheme"), "{err}");
}
