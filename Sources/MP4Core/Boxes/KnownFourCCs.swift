// Box types and codes the library refers to by name.
extension FourCC {
    public static let ftyp: FourCC = "ftyp", styp: FourCC = "styp", moov: FourCC = "moov", mdat: FourCC = "mdat"
    public static let free: FourCC = "free", skip: FourCC = "skip", wide: FourCC = "wide", uuid: FourCC = "uuid"
    public static let moof: FourCC = "moof", mfra: FourCC = "mfra", mfro: FourCC = "mfro", tfra: FourCC = "tfra"
    public static let sidx: FourCC = "sidx", ssix: FourCC = "ssix", prft: FourCC = "prft", emsg: FourCC = "emsg"
    public static let mvhd: FourCC = "mvhd", trak: FourCC = "trak", tkhd: FourCC = "tkhd", edts: FourCC = "edts"
    public static let elst: FourCC = "elst", mdia: FourCC = "mdia", mdhd: FourCC = "mdhd", hdlr: FourCC = "hdlr"
    public static let minf: FourCC = "minf", stbl: FourCC = "stbl", stsd: FourCC = "stsd", stts: FourCC = "stts"
    public static let ctts: FourCC = "ctts", stss: FourCC = "stss", stsc: FourCC = "stsc", stsz: FourCC = "stsz"
    public static let stz2: FourCC = "stz2", stco: FourCC = "stco", co64: FourCC = "co64", sdtp: FourCC = "sdtp"
    public static let mvex: FourCC = "mvex", mehd: FourCC = "mehd", trex: FourCC = "trex", mfhd: FourCC = "mfhd"
    public static let traf: FourCC = "traf", tfhd: FourCC = "tfhd", tfdt: FourCC = "tfdt", trun: FourCC = "trun"
    public static let meta: FourCC = "meta", ilst: FourCC = "ilst", udta: FourCC = "udta", iloc: FourCC = "iloc"
    public static let cmov: FourCC = "cmov", dinf: FourCC = "dinf", dref: FourCC = "dref", sinf: FourCC = "sinf"
    public static let frma: FourCC = "frma", schm: FourCC = "schm", schi: FourCC = "schi", tenc: FourCC = "tenc"
    public static let wave: FourCC = "wave", tref: FourCC = "tref", saio: FourCC = "saio", saiz: FourCC = "saiz"
    // Sample entry formats and codec configuration boxes.
    public static let avc1: FourCC = "avc1", avc3: FourCC = "avc3", hvc1: FourCC = "hvc1", hev1: FourCC = "hev1"
    public static let av01: FourCC = "av01", vp08: FourCC = "vp08", vp09: FourCC = "vp09", mp4a: FourCC = "mp4a"
    public static let mp4v: FourCC = "mp4v", opus: FourCC = "Opus", ac3: FourCC = "ac-3", ec3: FourCC = "ec-3"
    public static let alac: FourCC = "alac", flac: FourCC = "fLaC", encv: FourCC = "encv", enca: FourCC = "enca"
    public static let avcC: FourCC = "avcC", hvcC: FourCC = "hvcC", av1C: FourCC = "av1C", vpcC: FourCC = "vpcC"
    public static let esds: FourCC = "esds", dOps: FourCC = "dOps", dac3: FourCC = "dac3", dec3: FourCC = "dec3"
    public static let dfLa: FourCC = "dfLa", pasp: FourCC = "pasp", btrt: FourCC = "btrt"
    public static let tx3g: FourCC = "tx3g", wvtt: FourCC = "wvtt", stpp: FourCC = "stpp"
    // Handler types.
    public static let vide: FourCC = "vide", soun: FourCC = "soun", text: FourCC = "text", sbtl: FourCC = "sbtl"
    public static let subt: FourCC = "subt", clcp: FourCC = "clcp", hint: FourCC = "hint", tmcd: FourCC = "tmcd"
    public static let mdir: FourCC = "mdir"
    // Brands.
    public static let qt: FourCC = "qt  "
}
