//! `ccbench completions SHELL` and `ccbench man`: shell completions and man pages generated from
//! the same clap definition the parser uses, so they cannot fall behind the flags.

use std::io::Write;

use anyhow::Context;
use clap::CommandFactory;

use crate::cli::Cli;
use crate::cli::{CompletionsArgs, ManArgs};

pub fn completions(args: &CompletionsArgs) -> i32 {
    clap_complete::generate(args.shell, &mut Cli::command(), "ccbench", &mut std::io::stdout());
    0
}

pub fn man(args: &ManArgs) -> anyhow::Result<i32> {
    match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(Cli::command(), dir).with_context(|| format!("writing man pages into {}", dir.display()))?;
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut page)?;
            std::io::stdout().write_all(&page)?;
        }
    }
    Ok(0)
}
