-- Drives a headless Neovim as a user would: loads the documented configuration,
-- opens a file, waits for torchdet-lint's diagnostics, applies a quick fix and
-- saves, then types a line and waits for the new diagnostic. What it sees, and
-- how long each step took, goes to a JSON file for tests/test_neovim.py.
-- Written for Neovim 0.7's API (Debian 12), which later versions keep.

local plan = vim.fn.json_decode(os.getenv("TDL_PLAN"))
local result = { steps = {} }

local function write_result()
  vim.fn.writefile({ vim.fn.json_encode(result) }, plan.result)
end

local function finish(error_message)
  result.error = error_message
  write_result()
  vim.cmd("qall!")
end

local function clock_ms()
  return vim.loop.hrtime() / 1e6
end

local function code_of(diagnostic)
  if diagnostic.code ~= nil then
    return diagnostic.code
  end
  local lsp = diagnostic.user_data and diagnostic.user_data.lsp
  return lsp and lsp.code
end

-- The buffer's diagnostics as (code, line, col, end line, end col), sorted.
local function seen(bufnr)
  local list = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(list, { code_of(d), d.lnum, d.col, d.end_lnum, d.end_col })
  end
  table.sort(list, function(a, b)
    if a[2] ~= b[2] then
      return a[2] < b[2]
    end
    return a[3] < b[3]
  end)
  return list
end

local function has(bufnr, code)
  for _, d in ipairs(seen(bufnr)) do
    if d[1] == code then
      return true
    end
  end
  return false
end

-- Milliseconds until `predicate` holds (the event loop runs meanwhile).
local function wait_for(what, bufnr, predicate)
  local start = clock_ms()
  if not vim.wait(plan.timeout_ms, predicate, 5) then
    error("timed out waiting for " .. what .. "; diagnostics: " .. vim.inspect(seen(bufnr)), 0)
  end
  return clock_ms() - start
end

local ok, error_message = pcall(function()
  vim.cmd("filetype on") -- `-u NONE` skips it; every user configuration has it
  if plan.compat then
    dofile(plan.compat)
  end
  dofile(plan.config) -- the snippet of docs/integrations.md, as a user pastes it into init.lua

  local opened = clock_ms()
  vim.cmd("edit " .. vim.fn.fnameescape(plan.file))
  local bufnr = vim.api.nvim_get_current_buf()
  wait_for("the first diagnostics", bufnr, function()
    return #seen(bufnr) > 0
  end)
  result.open_to_first_diagnostics_ms = clock_ms() - opened
  result.first_diagnostics = seen(bufnr)
  -- The project finding comes once the server has the helper module's summary.
  wait_for(plan.project_code, bufnr, function()
    return has(bufnr, plan.project_code)
  end)
  result.open_to_project_diagnostics_ms = clock_ms() - opened
  result.opened = seen(bufnr)

  -- The quick fix of one diagnostic, requested for its range as `:lua vim.lsp.buf.code_action()` does.
  local target
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if code_of(d) == plan.fix_code then
      target = d
    end
  end
  local range = {
    start = { line = target.lnum, character = target.col },
    ["end"] = { line = target.end_lnum, character = target.end_col },
  }
  local params = {
    textDocument = vim.lsp.util.make_text_document_params(bufnr),
    range = range,
    context = {
      diagnostics = { { range = range, message = target.message, code = plan.fix_code, source = target.source } },
      only = { "quickfix" },
    },
  }
  local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", params, plan.timeout_ms)
  local chosen
  result.action_titles = {}
  for client_id, response in pairs(responses or {}) do
    for _, action in ipairs(response.result or {}) do
      table.insert(result.action_titles, action.title)
      if action.isPreferred and action.edit then
        chosen = { action = action, client = vim.lsp.get_client_by_id(client_id) }
      end
    end
  end
  if not chosen then
    error("no preferred quick fix among " .. vim.inspect(result.action_titles), 0)
  end
  result.applied_title = chosen.action.title
  vim.lsp.util.apply_workspace_edit(chosen.action.edit, chosen.client.offset_encoding)
  vim.cmd("write")
  wait_for("the fixed diagnostic to go", bufnr, function()
    return not has(bufnr, plan.fix_code)
  end)
  result.after_fix = seen(bufnr)

  -- Typing a line: didChange (debounced by Neovim), then the server's own debounce.
  local edited = clock_ms()
  vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, { plan.new_line })
  wait_for(plan.new_code, bufnr, function()
    return has(bufnr, plan.new_code)
  end)
  result.edit_to_diagnostics_ms = clock_ms() - edited
  result.after_edit = seen(bufnr)
  result.encoding = chosen.client.offset_encoding
end)

finish(not ok and tostring(error_message) or nil)
