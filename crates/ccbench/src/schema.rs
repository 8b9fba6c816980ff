//! The JSON Schemas of the JSON files ccbench writes for people and programs to read, derived
//! from the types that write them (schemars, following their serde attributes). The committed
//! copies are in `docs/schema/`; a test regenerates them and fails when they differ.

/// Each schema's file name under `docs/schema/`, and the schema.
pub fn schemas() -> Vec<(&'static str, schemars::Schema)> {
    vec![("result.schema.json", ccbench_model::result_schema()), ("compare.schema.json", schemars::schema_for!(crate::compare::CompareResult))]
}

/// A schema as committed: pretty-printed JSON with a final newline.
pub fn to_text(schema: &schemars::Schema) -> String {
    serde_json::to_string_pretty(schema).expect("a schema is JSON") + "\n"
}
