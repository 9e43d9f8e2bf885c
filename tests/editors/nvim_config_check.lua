-- Runs a Neovim configuration snippet against stand-ins of the APIs it registers
-- the server with (0.11's vim.lsp.config/enable, nvim-lspconfig), so any Neovim
-- can check it, and writes down what it registered (functions left out).
local recorded = { configs = {}, enabled = {}, setup = {} }

local function plain(config)
  local markers = config.root_markers
  if type(config.root_dir) == "function" then
    markers = config.root_dir() -- the stand-in root_pattern returns its markers
  end
  return { cmd = config.cmd, filetypes = config.filetypes, root_markers = markers }
end

vim.lsp.config = function(name, config)
  recorded.configs[name] = plain(config)
end
vim.lsp.enable = function(name)
  table.insert(recorded.enabled, name)
end

local registry = {}
package.preload["lspconfig.configs"] = function()
  return registry
end
package.preload["lspconfig.util"] = function()
  return {
    root_pattern = function(...)
      local markers = { ... }
      return function()
        return markers
      end
    end,
  }
end
package.preload["lspconfig"] = function()
  return setmetatable({}, {
    __index = function(_, name)
      return {
        setup = function()
          recorded.setup[name] = plain(registry[name].default_config)
        end,
      }
    end,
  })
end

local ok, error_message = pcall(dofile, os.getenv("TDL_SNIPPET"))
recorded.error = not ok and tostring(error_message) or nil
vim.fn.writefile({ vim.fn.json_encode(recorded) }, os.getenv("TDL_RESULT"))
vim.cmd("qall!")
