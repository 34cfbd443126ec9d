export * from './mcp-server.js'
export * from './principal.js'
// The composition root connects the server over stdio; it gets the transport from here so the
// SDK stays a dependency of this package alone.
export { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
