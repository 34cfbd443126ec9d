// History-API routing for /ui/... pages: links inside the app change the page without a reload,
// and the server answers the same shell for every /ui path, so reloads and shared links work.

let render = () => {}

export function navigate(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', path)
  else history.pushState(null, '', path)
  render()
}

function followInAppLink(event) {
  if (
    event.defaultPrevented ||
    event.button !== 0 ||
    event.metaKey ||
    event.ctrlKey ||
    event.shiftKey ||
    event.altKey
  )
    return
  const link = event.target instanceof Element ? event.target.closest('a[href]') : null
  if (!link || link.target || link.hasAttribute('download')) return
  const url = new URL(link.href)
  if (url.origin !== location.origin || !/^\/ui(\/|$)/.test(url.pathname)) return
  event.preventDefault()
  navigate(url.pathname + url.search)
}

export function startRouter(onRender) {
  render = onRender
  addEventListener('popstate', () => render())
  document.addEventListener('click', followInAppLink)
  render()
}
