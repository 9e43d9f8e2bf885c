//! Zed starts a language server only through an extension: this one runs
//! `torchdet-lint server`, from `lsp.torchdet-lint.binary` in the settings when
//! given, else the `torchdet-lint` on the project's PATH (its virtualenv's, when
//! Zed was started from it).
use zed_extension_api::{self as zed, settings::LspSettings, LanguageServerId, Result};

struct TorchdetLint;

impl zed::Extension for TorchdetLint {
    fn new() -> Self {
        TorchdetLint
    }

    fn language_server_command(
        &mut self,
        language_server_id: &LanguageServerId,
        worktree: &zed::Worktree,
    ) -> Result<zed::Command> {
        let binary = LspSettings::for_worktree(language_server_id.as_ref(), worktree)
            .ok()
            .and_then(|settings| settings.binary);
        let command = binary
            .as_ref()
            .and_then(|binary| binary.path.clone())
            .or_else(|| worktree.which("torchdet-lint"))
            .ok_or_else(|| {
                "torchdet-lint is not on PATH: in the project's environment, pip install '.[server]' in a clone \
                 of torchdet-lint (or pip install \"torchdet-lint[server] @ git+URL\" with URL its repository's \
                 address), or set lsp.torchdet-lint.binary.path"
                    .to_string()
            })?;
        let args = binary
            .and_then(|binary| binary.arguments)
            .unwrap_or_else(|| vec!["server".to_string()]);
        Ok(zed::Command {
            command,
            args,
            env: worktree.shell_env(),
        })
    }
}

zed::register_extension!(TorchdetLint);
