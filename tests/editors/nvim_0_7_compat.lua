-- Neovim 0.7 (Debian 12's package) has neither vim.lsp.start nor vim.fs (both
-- 0.8): the documented configuration runs on it through these stand-ins,
-- which follow 0.8's own. Loaded only when they are missing.
if not vim.fs then
  vim.fs = {}

  function vim.fs.dirname(file)
    if file == nil then
      return nil
    end
    return vim.fn.fnamemodify(file, ":h")
  end

  function vim.fs.find(names, opts)
    local directory = opts.path or vim.loop.cwd()
    while directory do
      for _, name in ipairs(names) do
        local candidate = directory .. "/" .. name
        if vim.loop.fs_stat(candidate) then
          return { candidate }
        end
      end
      local parent = vim.fn.fnamemodify(directory, ":h")
      if not opts.upward or parent == directory then
        return {}
      end
      directory = parent
    end
    return {}
  end
end

if not vim.lsp.start then
  function vim.lsp.start(config, opts)
    opts = opts or {}
    local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
    for _, client in pairs(vim.lsp.get_active_clients()) do
      if client.name == config.name and client.config.root_dir == config.root_dir then
        vim.lsp.buf_attach_client(bufnr, client.id)
        return client.id
      end
    end
    local client_id = vim.lsp.start_client(config)
    if client_id then
      vim.lsp.buf_attach_client(bufnr, client_id)
    end
    return client_id
  end
end
